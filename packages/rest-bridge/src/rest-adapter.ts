import { AppError, type Context, type KasMeta, type Logger } from '@kas/server';
import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { sendError } from './errors.ts';
import { invokeProcedure } from './invoke.ts';
import { sendJson } from './send-json.ts';

type ZodLike = { _zod: { def: Record<string, any> } };

/** Follows optional/nullable/default/pipe wrappers down to the schema that decides the value's type. */
function baseSchema(schema: ZodLike | undefined): ZodLike | undefined {
  let current = schema;
  for (let i = 0; current && i < 10; i++) {
    const def = current._zod.def;
    if (
      ['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional'].includes(def.type)
    ) {
      current = def.innerType;
    } else if (def.type === 'pipe') {
      current = def.in;
    } else {
      return current;
    }
  }
  return current;
}

/**
 * Query strings carry only text; coerce by the field's schema, strictly: booleans only from
 * `true`/`false`, integers only from digits. Anything else is passed through for Zod to reject (422).
 */
function coerceQueryValue(schema: ZodLike | undefined, value: unknown): unknown {
  const base = baseSchema(schema);
  if (!base) return value;
  const type = base._zod.def.type;
  if (type === 'array') {
    const items = Array.isArray(value) ? value : [value];
    return items.map((item) => coerceQueryValue(base._zod.def.element, item));
  }
  if (typeof value !== 'string') return value;
  if (type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  if (type === 'number') {
    const isInt = (base as unknown as { isInt?: boolean }).isInt === true;
    const pattern = isInt ? /^-?\d+$/ : /^-?\d+(\.\d+)?$/;
    return pattern.test(value) ? Number(value) : value;
  }
  if (type === 'null' && value === 'null') return null;
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function shapeOf(procedure: AnyTRPCProcedure): Record<string, ZodLike> {
  const input = (procedure._def as unknown as { inputs: ZodLike[] }).inputs[0];
  const base = baseSchema(input);
  return (base?._zod.def.shape as Record<string, ZodLike> | undefined) ?? {};
}

function coerceParams(
  shape: Record<string, ZodLike>,
  params: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) out[key] = coerceQueryValue(shape[key], value);
  return out;
}

/** Reads a multipart form's files into `req.files`, answering 413/422 itself when the form is refused. */
function multipartReader(
  spec: NonNullable<KasMeta['multipart']>,
  maxFileBytes: number,
  logger: Logger,
): RequestHandler {
  const reader = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: maxFileBytes, files: spec.maxFiles },
  }).array(spec.field, spec.maxFiles);
  return (req, res, next) => {
    if (!req.is('multipart/form-data')) return next();
    reader(req, res, (error?: unknown) => {
      if (!error) return next();
      const code = (error as { code?: string }).code;
      const refusal =
        code === 'LIMIT_FILE_SIZE' || code === 'LIMIT_FILE_COUNT'
          ? new AppError(
              'PAYLOAD_TOO_LARGE',
              `At most ${spec.maxFiles} files of ${Math.round(maxFileBytes / 1024 / 1024)} MB each`,
            )
          : new AppError('VALIDATION_ERROR', `Malformed multipart upload (use the field "${spec.field}")`);
      sendError(res, refusal, logger);
    });
  };
}

/** The uploaded files as the procedure's input: names decoded as UTF-8 (busboy reads them as latin1). */
function filesInput(req: Request): { files: { name: string; content_type: string; data: Uint8Array }[] } {
  const files = (req.files as Express.Multer.File[] | undefined) ?? [];
  return {
    files: files.map((f) => ({
      name: Buffer.from(f.originalname, 'latin1').toString('utf8'),
      content_type: f.mimetype || 'application/octet-stream',
      data: f.buffer,
    })),
  };
}

/** A signed webhook's input: its headers (lower-case names) and the body exactly as it arrived. */
function rawBodyInput(req: Request): { headers: Record<string, string>; raw_body: string } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (typeof value === 'string') headers[name.toLowerCase()] = value;
  const raw = (req as Request & { rawBody?: Buffer }).rawBody;
  return { headers, raw_body: raw ? raw.toString('utf8') : '' };
}

export interface RestRoute {
  method: string;
  path: string;
  procedurePath: string;
}

/**
 * Serves every procedure that has `meta.openapi` at its exact path. Ours rather than trpc-to-openapi's
 * handler, which coerces JSON bodies (`null` → 0) and mutates the shared Zod schemas.
 */
export function createRestAdapter(options: {
  router: AnyTRPCRouter;
  createContext(req: Request, res: Response): Context;
  logger: Logger;
  /** Largest uploaded file a multipart procedure accepts. */
  maxUploadBytes: number;
}): {
  handler: RequestHandler;
  routes: RestRoute[];
  /**
   * A handler for the front of the router: it answers the parameterless paths (after `readBody`) at
   * once, so they skip the routes registered before the adapter, and passes on every other request and
   * every path `claimedBefore` says an earlier route answers.
   */
  front(readBody: RequestHandler, claimedBefore: (method: string, path: string) => boolean): RequestHandler;
} {
  const router = express.Router();
  const routes: RestRoute[] = [];
  // Paths without parameters are found by one map lookup instead of testing every route's pattern in
  // turn; everything else (parameters, HEAD, a trailing slash, other letter case) goes to the router.
  const exact = new Map<string, RequestHandler[]>();
  const procedures = options.router._def.procedures as unknown as Record<string, AnyTRPCProcedure>;
  for (const [procedurePath, procedure] of Object.entries(procedures)) {
    const meta = procedure._def.meta as KasMeta | undefined;
    const openapi = meta?.openapi;
    if (!openapi || openapi.enabled === false) continue;
    const method = openapi.method.toLowerCase() as 'get' | 'post' | 'patch' | 'put' | 'delete';
    const expressPath = openapi.path.replace(/\{(\w+)\}/g, ':$1');
    const shape = shapeOf(procedure);
    const readsQuery = method === 'get' || method === 'delete';
    routes.push({ method: openapi.method, path: openapi.path, procedurePath });

    const before: RequestHandler[] = meta?.multipart
      ? [multipartReader(meta.multipart, options.maxUploadBytes, options.logger)]
      : [];
    const serve: RequestHandler = async (req, res) => {
      try {
        const pathParams = coerceParams(shape, req.params as Record<string, string>);
        let input: unknown;
        if (meta?.multipart) {
          input = filesInput(req);
        } else if (meta?.rawBody) {
          input = { ...pathParams, ...rawBodyInput(req) };
        } else if (readsQuery) {
          input = { ...coerceParams(shape, req.query as Record<string, unknown>), ...pathParams };
        } else {
          const body: unknown = req.body === undefined ? {} : req.body;
          input = isPlainObject(body) ? { ...body, ...pathParams } : body;
        }
        const ctx = options.createContext(req, res);
        // Invoked directly, without building a caller proxy per request (invoke.ts).
        const result = await invokeProcedure(procedure, {
          path: procedurePath,
          getRawInput: async () => input,
          ctx,
          signal: ctx.req.signal,
        });
        if (meta?.noContent) {
          res.status(204).end();
        } else if (meta?.download && result instanceof Uint8Array) {
          res.type(meta.download.contentType);
          res.setHeader('content-disposition', `attachment; filename="${meta.download.fileName}"`);
          res.end(result);
        } else {
          sendJson(req, res, result ?? null);
        }
      } catch (error) {
        sendError(res, error, options.logger);
      }
    };
    router[method](expressPath, ...before, serve);
    if (!expressPath.includes(':'))
      exact.set(`${openapi.method.toUpperCase()} ${expressPath}`, [...before, serve]);
  }
  const runChain = (chain: RequestHandler[], req: Request, res: Response, next: NextFunction) => {
    req.params = {};
    const run = (index: number) => {
      const step = chain[index];
      if (step) void step(req, res, (error?: unknown) => (error ? next(error) : run(index + 1)));
    };
    run(0);
  };
  const handler: RequestHandler = (req, res, next) => {
    const chain = exact.get(`${req.method} ${req.path}`);
    if (!chain) return router(req, res, next);
    runChain(chain, req, res, next);
  };
  const front = (
    readBody: RequestHandler,
    claimedBefore: (method: string, path: string) => boolean,
  ): RequestHandler => {
    const served = new Map<string, RequestHandler[]>();
    for (const [key, chain] of exact) {
      const [method, path] = key.split(' ') as [string, string];
      if (!claimedBefore(method, path)) served.set(key, [readBody, ...chain]);
    }
    return (req, res, next) => {
      const chain = served.get(`${req.method} ${req.path}`);
      if (!chain) return next();
      runChain(chain, req, res, next);
    };
  };
  return { handler, routes, front };
}
