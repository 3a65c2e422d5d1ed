import type { Request, Response } from 'express';

/**
 * `res.json` for a procedure's answer: the same bytes and headers, without express's lookups of app
 * settings and its re-parsing of the content type on every call. express answers itself whenever it
 * might do more: a conditional request (its freshness check), a status or content type already set, a
 * value JSON cannot write. The app sets no JSON replacer, spaces or escaping (express's `json *`
 * settings), which this does not read.
 */
export function sendJson(req: Request, res: Response, value: unknown): void {
  const body = JSON.stringify(value) as string | undefined;
  if (
    body === undefined ||
    res.statusCode !== 200 ||
    req.headers['if-none-match'] !== undefined ||
    req.headers['if-modified-since'] !== undefined ||
    res.getHeader('content-type') !== undefined
  ) {
    res.json(value);
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}
