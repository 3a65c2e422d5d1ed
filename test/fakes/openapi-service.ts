import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the fake OpenAPI service received. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface FakeOpenApiService {
  url: string;
  /** The specification of the service, served at `/openapi.json` too; `trailingCommas` gives the file's text. */
  spec(): Record<string, unknown>;
  specText(): string;
  requests: ReceivedRequest[];
  /** When set, every request must carry `Authorization: Bearer <token>` or gets 401. */
  requiredBearer: string | null;
  /** When set, decides from the headers whether a request is authorized (else 401), like a real resource server. */
  authorize: ((headers: IncomingMessage['headers']) => Promise<boolean>) | null;
  close(): Promise<void>;
}

/**
 * A small weather API described by an OpenAPI 3 document: a forecast per city (path and query
 * parameters), alert creation (JSON body), a response too large to pass on, and a slow one.
 */
export async function startFakeOpenApiService(): Promise<FakeOpenApiService> {
  const requests: ReceivedRequest[] = [];
  const fake = { requests, requiredBearer: null, authorize: null } as unknown as FakeOpenApiService;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (url.pathname === '/openapi.json') return json(200, fake.spec());
    if (fake.requiredBearer && req.headers.authorization !== `Bearer ${fake.requiredBearer}`)
      return json(401, { error: 'invalid token' });
    if (fake.authorize && !(await fake.authorize(req.headers))) return json(401, { error: 'invalid token' });
    const forecast = url.pathname.match(/^\/v1\/forecast\/([^/]+)$/);
    if (req.method === 'GET' && forecast) {
      const days = Number(url.searchParams.get('days') ?? '1');
      const city = decodeURIComponent(forecast[1] as string);
      return json(200, { city, days, forecast: Array.from({ length: days }, () => 'sunny') });
    }
    if (req.method === 'POST' && url.pathname === '/v1/alerts') {
      const alert = JSON.parse(body || '{}') as Record<string, unknown>;
      return json(201, { id: 'alert-1', ...alert });
    }
    if (req.method === 'GET' && url.pathname === '/v1/big') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1024 * 1024));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/v1/slow') {
      setTimeout(() => json(200, { late: true }), 5000).unref();
      return;
    }
    json(404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const spec = () => ({
    openapi: '3.0.3',
    info: { title: 'Weather', description: 'Forecasts and weather alerts', version: '1.0.0' },
    servers: [{ url: `${base}/v1` }],
    paths: {
      '/forecast/{city}': {
        get: {
          operationId: 'getForecast',
          summary: 'Weather forecast for a city',
          parameters: [
            { name: 'city', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'days', in: 'query', schema: { type: 'integer' } },
          ],
        },
      },
      '/alerts': {
        post: {
          operationId: 'createAlert',
          summary: 'Create a weather alert',
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { city: { type: 'string' }, level: { type: 'string' } },
                },
              },
            },
          },
        },
      },
      '/big': { get: { operationId: 'getBig', summary: 'A very large report' } },
      '/slow': { get: { operationId: 'getSlow', summary: 'A slow report' } },
    },
  });
  Object.assign(fake, {
    url: base,
    spec,
    // The uploaded file as people write it: trailing commas after the last members.
    specText: () => JSON.stringify(spec(), null, 2).replace(/(["\d\]}])(\n\s*[}\]])/g, '$1,$2'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return fake;
}
