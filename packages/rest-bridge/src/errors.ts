import { type Logger, toErrorResponse } from '@kas/server';
import type { Response } from 'express';
import { requestId } from './request-log.ts';

/** Writes `{error_code, detail}` with the status and headers from the one error table. */
export function sendError(res: Response, error: unknown, logger: Logger): void {
  const body = toErrorResponse(error);
  if (body.error_code === 'INTERNAL_ERROR')
    logger.error({ err: error, url: res.req.originalUrl, req_id: requestId(res) }, 'request failed');
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [name, value] of Object.entries(body.headers)) res.setHeader(name, value);
  res.status(body.status).json({ error_code: body.error_code, detail: body.detail });
}
