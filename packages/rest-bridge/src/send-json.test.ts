import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, rawRequest } from './http-parity.test-helpers.ts';
import { sendJson } from './send-json.ts';

const VALUES: Record<string, unknown> = {
  object: [{ api_key_id: 1, name: 'bootstrap admin', expires_at: null }],
  null: null,
  text: 'naïve — 日本語 ✓',
  number: 42,
};

let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  // Settings as the kas app has them (app.ts): no ETag, no X-Powered-By.
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  for (const [name, value] of Object.entries(VALUES)) {
    app.all(`/express/${name}`, (_req, res) => {
      res.json(value);
    });
    app.all(`/ours/${name}`, (req, res) => sendJson(req, res, value));
  }
  app.get('/express/typed', (_req, res) => {
    res.type('application/vnd.kas+json');
    res.json({ a: 1 });
  });
  app.get('/ours/typed', (req, res) => {
    res.type('application/vnd.kas+json');
    sendJson(req, res, { a: 1 });
  });
  server = await listen(app);
});
afterAll(() => server.stop());

describe('sendJson', () => {
  const cases: [string, { method?: string; headers?: Record<string, string> }][] = [
    ['GET', {}],
    ['HEAD', { method: 'HEAD' }],
    ['POST', { method: 'POST' }],
    ['GET If-None-Match: *', { headers: { 'if-none-match': '*' } }],
    ['GET If-Modified-Since', { headers: { 'if-modified-since': new Date().toUTCString() } }],
  ];
  for (const name of [...Object.keys(VALUES), 'typed'])
    for (const [label, options] of cases) {
      if (name === 'typed' && options.method) continue;
      it(`answers ${label} of a ${name} value exactly as res.json does`, async () => {
        const ours = await rawRequest(`${server.url}/ours/${name}`, options);
        const theirs = await rawRequest(`${server.url}/express/${name}`, options);
        expect(ours).toEqual(theirs);
        if (label === 'GET') expect(ours.status).toBe(200);
      });
    }
});
