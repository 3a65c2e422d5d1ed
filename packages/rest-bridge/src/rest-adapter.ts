import { AppError, authorize, type Context, type KasMeta, type Logger } from '@kas/server';
import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import express, { type Request, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { sendError } from './errors.ts';
import { invokeProcedure } from './invoke.ts';

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

/** The limits of one multipart upload. */
export interface MultipartLimits {
  /** Largest file. */
  maxFileBytes: number;
  /** Largest request body, all parts together. */
  maxRequestBytes: number;
  /** Most text fields, and the largest one. */
  maxFields: number;
  maxFieldBytes: number;
}

const MB = 1024 * 1024;

/** Answers a refusal and closes the connection, so a body not read is never read. */
function refuseUnread(req: Request, res: Response, error: unknown, logger: Logger): void {
  res.setHeader('connection', 'close');
  sendError(res, error, logger);
  req.unpipe();
}

/**
 * Reads a multipart form's files into `req.files`, answering 413/422 itself when the form is refused.
 * The caller is authenticated and authorised (the procedure's `minRole`, the same `authorize` its own
 * middleware runs) before a byte of the body is read: a refused caller gets its 401/403/429 and the
 * connection is closed unread. Then the body is capped as a whole (Content-Length up front, the bytes
 * as they arrive otherwise), per file, and in the count and size of text fields.
 */
function multipartReader(
  spec: NonNullable<KasMeta['multipart']>,
  minRole: KasMeta['minRole'],
  limits: MultipartLimits,
  createContext: (req: Request, res: Response) => Context,
  logger: Logger,
): RequestHandler {
  const reader = multer({
    storage: multer.memoryStorage(),
    limits: {
      fileSize: limits.maxFileBytes,
      files: spec.maxFiles,
      fields: limits.maxFields,
      fieldSize: limits.maxFieldBytes,
      parts: spec.maxFiles + limits.maxFields,
    },
  }).array(spec.field, spec.maxFiles);
  const tooLarge = (what: string) => new AppError('PAYLOAD_TOO_LARGE', what);
  const requestCap = `An upload is at most ${Math.round(limits.maxRequestBytes / MB)} MB in all (KAS_MAX_UPLOAD_REQUEST_MB)`;
  return async (req, res, next) => {
    const ctx = createContext(req, res);
    try {
      ctx.actor = await authorize(ctx, minRole);
    } catch (error) {
      return refuseUnread(req, res, error, logger);
    }
    (req as Request & { kasContext?: Context }).kasContext = ctx;
    if (!req.is('multipart/form-data')) return next();
    const declared = Number(req.headers['content-length']);
    if (declared > limits.maxRequestBytes) return refuseUnread(req, res, tooLarge(requestCap), logger);
    let received = 0;
    let overRequestCap = false;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > limits.maxRequestBytes && !overRequestCap) {
        overRequestCap = true;
        req.unpipe();
        req.pause();
        refuseUnread(req, res, tooLarge(requestCap), logger);
      }
    });
    reader(req, res, (error?: unknown) => {
      if (overRequestCap || res.headersSent) return;
      if (!error) return next();
      const code = (error as { code?: string }).code;
      const refusal =
        code === 'LIMIT_FILE_SIZE' || code === 'LIMIT_FILE_COUNT'
          ? tooLarge(
              `At most ${spec.maxFiles} files of ${Math.round(limits.maxFileBytes / MB)} MB each (KAS_MAX_UPLOAD_MB)`,
            )
          : code === 'LIMIT_FIELD_COUNT' || code === 'LIMIT_PART_COUNT'
            ? tooLarge(`At most ${limits.maxFields} text fields in an upload`)
            : code === 'LIMIT_FIELD_VALUE' || code === 'LIMIT_FIELD_KEY'
              ? tooLarge(`A text field of an upload is at most ${Math.round(limits.maxFieldBytes / 1024)} KB`)
              : new AppError(
                  'VALIDATION_ERROR',
                  `Malformed multipart upload (use the field "${spec.field}")`,
                );
      // The rest of the body is discarded as it arrives (still within the request cap above), so a
      // client that sends it whole reads the answer.
      sendError(res, refusal, logger);
      req.resume();
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
 * Runs a procedure for one HTTP request: its middlewares (auth, rate limit), input and output
 * validation, with the outcome of calling the built procedure (`procedure({ ctx, path, type,
 * getRawInput, signal, batchIndex: 0 })`, as tRPC's adapters and `createCaller` do). The one way the
 * bridge calls a procedure, for the REST paths and the chat stream alike; the context carries the
 * request's abort signal.
 *
 * The one patch kept: `invokeProcedure` (invoke.ts) runs the middleware chain instead of tRPC's private
 * `callRecursive`, whose transpiled object spreads (two per middleware, two more in the output
 * validator) made the call cost far more than the work. Measured in one process, the same requests
 * alternating between the two builds (load 14): the public entry (`procedure(opts)`) costs 18.6 µs of
 * CPU more per authenticated GET than this runner and allocates ~50 % more, which alone puts the
 * platform benchmark's authenticated GET below its floor of 50 % of bare express. Helmet as middleware
 * and `res.json` measured within 2 µs of the replayed headers and the JSON bypass they replaced, so
 * those patches are gone. The parity tests (invoke.test.ts) compare this runner with the built
 * procedure's own call, streamed answers included; drop both when tRPC's runner no longer spreads its
 * options per middleware.
 */
export function callProcedure(
  procedure: AnyTRPCProcedure,
  call: { path: string; ctx: Context; input: unknown },
): Promise<unknown> {
  return invokeProcedure(procedure, {
    path: call.path,
    ctx: call.ctx,
    getRawInput: async () => call.input,
    signal: call.ctx.req.signal,
  });
}

/**
 * Serves every procedure that has `meta.openapi` at its exact path. Ours rather than trpc-to-openapi's
 * handler, which coerces JSON bodies (`null` → 0) and mutates the shared Zod schemas. Mount it after the
 * hand-written routes: express answers with the first route that matches, so one registered before the
 * adapter for the same path is the one that answers.
 */
export function createRestAdapter(options: {
  router: AnyTRPCRouter;
  /**
   * Where the routes go (a new router by default) and the path they are under. The app adds them to
   * itself under `/api`, so a REST request is matched by one router rather than by routers nested in
   * it (each level a router costs allocations and a path rewrite on every request).
   */
  into?: express.Router;
  prefix?: string;
  /** Reads a JSON body for the routes that take one (not GET and DELETE, which read the query). */
  readBody?: RequestHandler;
  createContext(req: Request, res: Response): Context;
  logger: Logger;
  /** What a multipart procedure accepts. */
  upload: MultipartLimits;
}): { handler: express.Router; routes: RestRoute[] } {
  const handler = options.into ?? express.Router();
  const routes: RestRoute[] = [];
  const procedures = Object.entries(options.router._def.procedures as Record<string, AnyTRPCProcedure>);
  // A path without parameters is registered before the parameterised ones, so `GET /persona/labels` is
  // not taken by `GET /persona/{persona_id}` whatever the order the routers declare them in.
  const literalFirst = procedures
    .map(([procedurePath, procedure]) => ({
      procedurePath,
      procedure,
      meta: procedure._def.meta as KasMeta | undefined,
    }))
    .filter(({ meta }) => meta?.openapi && meta.openapi.enabled !== false)
    .sort(
      (a, b) => Number(a.meta!.openapi!.path.includes('{')) - Number(b.meta!.openapi!.path.includes('{')),
    );
  for (const { procedurePath, procedure, meta } of literalFirst) {
    const openapi = meta!.openapi!;
    const method = openapi.method.toLowerCase() as 'get' | 'post' | 'patch' | 'put' | 'delete';
    const expressPath = openapi.path.replace(/\{(\w+)\}/g, ':$1');
    const shape = shapeOf(procedure);
    const readsQuery = method === 'get' || method === 'delete';
    routes.push({ method: openapi.method, path: openapi.path, procedurePath });

    const before: RequestHandler[] = meta?.multipart
      ? [multipartReader(meta.multipart, meta.minRole, options.upload, options.createContext, options.logger)]
      : !readsQuery && options.readBody
        ? [options.readBody]
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
        const result = await callProcedure(procedure, {
          path: procedurePath,
          ctx: (req as Request & { kasContext?: Context }).kasContext ?? options.createContext(req, res),
          input,
        });
        if (meta?.noContent) {
          res.status(204).end();
        } else if (meta?.download && result instanceof Uint8Array) {
          res.type(meta.download.contentType);
          res.setHeader('content-disposition', `attachment; filename="${meta.download.fileName}"`);
          res.end(result);
        } else {
          res.json(result ?? null);
        }
      } catch (error) {
        sendError(res, error, options.logger);
      }
    };
    handler[method](`${options.prefix ?? ''}${expressPath}`, ...before, serve);
  }
  return { handler, routes };
}
