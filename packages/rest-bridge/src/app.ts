import { type AppDeps, AppError, appRouter, createInnerContext, toErrorResponse } from '@kas/server';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import cors from 'cors';
import express, { type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import { registerChatRoutes } from './chat-routes.ts';
import { createDocsRouter } from './docs.ts';
import { sendError } from './errors.ts';
import { createMcpRouter } from './mcp-routes.ts';
import { createOAuthRouter } from './oauth-routes.ts';
import { createOpenAiRouter } from './openai-routes.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { noteActor, requestId, requestLog } from './request-log.ts';
import { createRestAdapter } from './rest-adapter.ts';

function requestContext(deps: AppDeps, req: Request, res: Response, trustsProxy: boolean) {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return createInnerContext(deps, {
    authorization: req.headers.authorization,
    // The client as `trust proxy` (KAS_TRUST_PROXY) resolves it: the socket's address unless a trusted proxy forwarded it.
    clientAddress: (trustsProxy ? req.ip : undefined) ?? req.socket.remoteAddress,
    setHeader: (name, value) => {
      if (!res.headersSent) res.setHeader(name, value);
    },
    signal: controller.signal,
    onActor: (actor) => noteActor(res, actor),
  });
}

/** A connector's signed webhook (its body is verified on its exact bytes). */
const WEBHOOK_PATH = /\/event\/?(\?|$)/;

/** Bodies of more bytes than this are parsed in the CPU pool (see `readBody`). */
const LARGE_JSON_BYTES = 256 * 1024;

/**
 * A JSON body large enough to parse off the event loop: declared longer than LARGE_JSON_BYTES, in
 * UTF-8 (another charset is express's parser's to refuse), not multipart, not a signed webhook's
 * (verified on its exact bytes) and not yet read.
 */
function isLargeJson(req: Request): boolean {
  if (!(Number(req.headers['content-length']) > LARGE_JSON_BYTES) || (req as { _body?: boolean })._body)
    return false;
  const type = String(req.headers['content-type'] ?? '').toLowerCase();
  if (type.startsWith('multipart/') || WEBHOOK_PATH.test(req.url ?? '')) return false;
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/.exec(type)?.[1];
  return charset === undefined || charset === 'utf-8' || charset === 'utf8';
}

/** The HTTP process: REST paths, /api/trpc, /api/openapi.json, /api/docs, /api/health. */
export function createHttpApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.KAS_TRUST_PROXY);
  app.use(requestLog(deps.logger));
  // API answers are not cached by validators: hashing every body for an ETag costs more than it saves.
  app.set('etag', false);
  // Security headers on every answer; the CSP lets /api/docs load only its own scripts and styles.
  app.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          'img-src': ["'self'", 'data:'],
          'style-src': ["'self'", "'unsafe-inline'"],
          'upgrade-insecure-requests': null,
        },
      },
      strictTransportSecurity: false,
      crossOriginResourcePolicy: {
        policy: deps.config.KAS_CORS_ORIGINS ? 'cross-origin' : 'same-origin',
      },
    }),
  );
  // CORS is off unless KAS_CORS_ORIGINS names the browser origins that may call the API (and /v1, for
  // browser-based chat clients).
  const origins = deps.config.KAS_CORS_ORIGINS?.split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  if (origins?.length)
    app.use(
      ['/api', '/v1'],
      cors({
        origin: origins,
        allowedHeaders: [
          'authorization',
          'content-type',
          'content-encoding',
          'trpc-accept',
          'x-trpc-source',
          'x-request-id',
        ],
        exposedHeaders: [
          'RateLimit-Limit',
          'RateLimit-Remaining',
          'RateLimit-Reset',
          'Retry-After',
          'X-Request-Id',
        ],
        maxAge: 600,
      }),
    );
  app.set('query parser', 'simple');

  const openApiDocument = JSON.stringify(buildOpenApiDocument());
  const api = express.Router();
  // One context for every way in (REST, the chat stream, /api/trpc), with the request's abort signal.
  // Without a trusted proxy the client is the socket's address: read it without express's `req.ip`,
  // which parses X-Forwarded-For to then ignore it.
  const trustsProxy = deps.config.KAS_TRUST_PROXY !== false && deps.config.KAS_TRUST_PROXY !== 0;
  const createContext = (req: Request, res: Response) => requestContext(deps, req, res, trustsProxy);

  const jsonBody = express.json({
    limit: `${deps.config.KAS_MAX_BODY_MB}mb`,
    // Clients that omit Content-Type still mean JSON; multipart uploads are handled by their own routes.
    type: (req) => !String(req.headers['content-type'] ?? '').startsWith('multipart/'),
    // Signed webhooks (connector events) verify the body exactly as it was sent.
    verify: (req, _res, buf) => {
      if (WEBHOOK_PATH.test(req.url ?? '')) (req as { rawBody?: Buffer }).rawBody = buf;
    },
  });
  // A large body's bytes only are read on the event loop; it is parsed in the CPU pool (JSON.parse of
  // a 5 MB document held the loop ~70 ms, everyone's requests waiting), as express's parser would.
  const rawBody = express.raw({ limit: `${deps.config.KAS_MAX_BODY_MB}mb`, type: () => true });
  const parsedInPool: express.RequestHandler = (req, res, next) =>
    rawBody(req, res, (error?: unknown) => {
      if (error !== undefined) return next(error);
      const bytes = req.body as Buffer;
      const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      deps.cpu
        .run(
          'parseJson',
          { data: bytes },
          { subject: 'the request body', ...(whole ? { transfer: [bytes.buffer as ArrayBuffer] } : {}) },
        )
        .then((value) => {
          req.body = value;
          next();
        }, next);
    });
  // Whatever fails while reading a body (a corrupt gzip or brotli stream, a broken connection) is the
  // request's fault; the mapping knows the parser's own errors (too large, bad JSON) by their type.
  const readBody: express.RequestHandler = (req, res, next) => {
    const done = (error?: unknown) =>
      next(
        error === undefined || error instanceof AppError || (error as { type?: unknown }).type
          ? error
          : new AppError('VALIDATION_ERROR', 'Unreadable request body (check Content-Encoding)'),
      );
    if (isLargeJson(req)) parsedInPool(req, res, done);
    else jsonBody(req, res, done);
  };
  // The REST paths on the app itself (express tries each route in order, so the most used are tried
  // first, and one router matches them); the hand-written routes before the REST adapter, because
  // express answers with the first route that matches.
  registerChatRoutes(app.router, {
    router: appRouter,
    createContext,
    logger: deps.logger,
    prefix: '/api',
    readBody,
  });
  createRestAdapter({
    router: appRouter,
    into: app.router,
    prefix: '/api',
    readBody,
    createContext,
    logger: deps.logger,
    upload: {
      maxFileBytes: deps.config.KAS_MAX_UPLOAD_MB * 1024 * 1024,
      maxRequestBytes: deps.config.KAS_MAX_UPLOAD_REQUEST_MB * 1024 * 1024,
      maxFields: deps.config.KAS_MAX_UPLOAD_FIELDS,
      maxFieldBytes: deps.config.KAS_MAX_UPLOAD_FIELD_KB * 1024,
    },
  });
  api.use(readBody);
  api.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApiDocument);
  });
  api.use('/docs', createDocsRouter());
  api.use('/trpc', (req, res, next) => {
    if (req.method === 'GET' || req.method === 'POST') return next();
    sendError(
      res,
      new AppError('METHOD_NOT_ALLOWED', `${req.method} is not supported on /api/trpc (use GET or POST)`),
      deps.logger,
    );
  });
  api.use(
    '/trpc',
    createExpressMiddleware({
      router: appRouter,
      createContext: ({ req, res }) => createContext(req, res),
      // /api/trpc answers with the same status and headers as the REST paths.
      responseMeta: ({ errors }) => {
        if (!errors[0]) return {};
        const failure = toErrorResponse(errors[0]);
        return { status: failure.status, headers: new Headers(failure.headers) };
      },
      onError: ({ error, path, req }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR') {
          const res = (req as Request).res;
          deps.logger.error(
            { err: error.cause ?? error, path, req_id: res ? requestId(res) : undefined },
            'trpc call failed',
          );
        }
      },
    }),
  );
  api.use((req, res) => {
    sendError(
      res,
      new AppError('NOT_FOUND', `No route for ${req.method} ${req.baseUrl}${req.path}`),
      deps.logger,
    );
  });
  api.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, error, deps.logger);
  });

  app.use('/api', api);
  // What the routes above pass on (a body that cannot be read) is answered like everything under /api.
  app.use('/api', (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, error, deps.logger);
  });
  app.use('/v1', createOpenAiRouter({ deps, createContext }));
  app.use(createMcpRouter({ deps, createContext }));
  app.use(createOAuthRouter(deps));
  app.get('/', (_req, res) => {
    res.redirect('/api/docs');
  });
  return app;
}
