import { randomUUID } from 'node:crypto';
import { type Logger, lineSink } from '@kas/server';
import type { Request, RequestHandler, Response } from 'express';

/** What a client or proxy may send as its own request id: short, and safe to echo and to log. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * New request ids: UUID-shaped, this process's random first 96 bits and a counter in the last 48, so
 * they are unique across processes and restarts without drawing random bytes for each request.
 */
const ID_PREFIX = randomUUID().slice(0, 24);
let idCounter = 0;

/** The request's id: the caller's `X-Request-Id` when it is a safe one, else a new one. */
export function requestIdOf(req: Request): string {
  const sent = req.headers['x-request-id'];
  if (typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent)) return sent;
  idCounter = (idCounter + 1) % 0x1000000000000;
  return ID_PREFIX + idCounter.toString(16).padStart(12, '0');
}

/** The id given to this request (set by the request log before anything else runs). */
export function requestId(res: Response): string | undefined {
  return (res.locals as { requestId?: string }).requestId;
}

/** Records the authenticated caller of the request for its log line. */
export function noteActor(res: Response, actor: { user_id: string; api_key_id: number | null }): void {
  res.locals.actor = actor;
}

/** How long the request log gathers lines before writing them (a write costs more CPU than many lines). */
const FLUSH_MS = 20;

/**
 * One line per request at `info` once its answer has ended (or the client went away): method, path,
 * the route it matched, status, duration, caller and request id. The id is the caller's `X-Request-Id`
 * when it is safe to echo, else a new one, and is sent back in `X-Request-Id`.
 *
 * The line is pino's own line (level, time, the logger's bindings, the fields, `msg`), written to the
 * logger's stream by hand and gathered for `FLUSH_MS` into one write: through `logger.info` (object
 * spread, pino's generic serialiser, one stream write per line) `info` cost ~6 µs of CPU more per
 * request than `warn` on an authenticated GET, against the platform benchmark's ≥ 50 %-of-bare-express
 * target. A logger without pino's stream (none in kas today) falls back to `logger.info`. Everything
 * else kas logs goes through pino as usual.
 */
export function requestLog(logger: Logger): RequestHandler {
  const sink = lineSink(logger);
  let pending = '';
  const flush = () => {
    const lines = pending;
    pending = '';
    if (lines && sink) sink.stream.write(lines);
  };
  return (req, res, next) => {
    const id = requestIdOf(req);
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    if (!logger.isLevelEnabled('info')) return next();
    const started = performance.now();
    res.on('close', () => {
      const actor = res.locals.actor as { user_id: string; api_key_id: number | null } | undefined;
      const route = (req as Request & { route?: { path?: unknown } }).route?.path;
      const path = req.originalUrl.split('?')[0];
      const ms = Math.round((performance.now() - started) * 10) / 10;
      if (!sink) {
        logger.info(
          {
            req_id: id,
            method: req.method,
            path,
            ...(typeof route === 'string' ? { route } : {}),
            status: res.statusCode,
            ms,
            ...(actor ? { actor: actor.user_id, api_key_id: actor.api_key_id } : {}),
            ...(res.writableFinished ? {} : { aborted: true }),
          },
          'request',
        );
        return;
      }
      if (!pending) setTimeout(flush, FLUSH_MS);
      pending += `${sink.head}${Date.now()}${sink.bindings},"req_id":${JSON.stringify(id)},"method":${JSON.stringify(req.method)},"path":${JSON.stringify(path)}${typeof route === 'string' ? `,"route":${JSON.stringify(route)}` : ''},"status":${res.statusCode},"ms":${ms}${actor ? `,"actor":${JSON.stringify(actor.user_id)},"api_key_id":${actor.api_key_id ?? 'null'}` : ''}${res.writableFinished ? '' : ',"aborted":true'},"msg":"request"}\n`;
    });
    next();
  };
}
