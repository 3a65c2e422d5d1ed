import { randomUUID } from 'node:crypto';
import type { Logger } from '@kas/server';
import type { Request, RequestHandler, Response } from 'express';

/** What a client or proxy may send as its own request id: short, and safe to echo and to log. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request's id: the caller's `X-Request-Id` when it is a safe one, else a new one. */
export function requestIdOf(req: Request): string {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** The id given to this request (set by the request log before anything else runs). */
export function requestId(res: Response): string | undefined {
  return (res.locals as { requestId?: string }).requestId;
}

/** Records the authenticated caller of the request for its log line. */
export function noteActor(res: Response, actor: { user_id: string; api_key_id: number | null }): void {
  res.locals.actor = actor;
}

/**
 * One line per request at `info` once its answer has ended (or the client went away): method, path,
 * the route it matched, status, duration, caller and request id. The id is the caller's `X-Request-Id`
 * when it is safe to echo, else a new one, and is sent back in `X-Request-Id`.
 */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const id = requestIdOf(req);
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    if (!logger.isLevelEnabled('info')) return next();
    const started = performance.now();
    res.once('close', () => {
      const actor = res.locals.actor as { user_id: string; api_key_id: number | null } | undefined;
      const route = (req as Request & { route?: { path?: unknown } }).route?.path;
      logger.info(
        {
          req_id: id,
          method: req.method,
          path: req.originalUrl.split('?')[0],
          ...(typeof route === 'string' ? { route } : {}),
          status: res.statusCode,
          ms: Math.round((performance.now() - started) * 10) / 10,
          ...(actor ? { actor: actor.user_id, api_key_id: actor.api_key_id } : {}),
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
    });
    next();
  };
}
