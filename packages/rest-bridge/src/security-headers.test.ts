import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import helmet from 'helmet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, rawRequest } from './http-parity.test-helpers.ts';
import { helmetOptions, securityHeaders } from './security-headers.ts';

const OPTIONS: Record<string, Parameters<typeof helmet>[0]> = {
  'kas, same origin': helmetOptions({ crossOrigin: false }),
  'kas, cross origin (KAS_CORS_ORIGINS)': helmetOptions({ crossOrigin: true }),
  'helmet defaults': {},
  'a CSP nonce per request': {
    contentSecurityPolicy: {
      useDefaults: true,
      directives: {
        'script-src': [
          "'self'",
          (_req: IncomingMessage, res: ServerResponse) => `'nonce-${(res as express.Response).locals.nonce}'`,
        ],
      },
    },
  },
};

let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((_req, res, next) => {
    res.locals.nonce = randomUUID();
    res.setHeader('X-Powered-By', 'something');
    next();
  });
  Object.values(OPTIONS).forEach((options, i) => {
    app.get(`/helmet/${i}`, helmet(options), (_req, res) => {
      res.json({ ok: true, nonce: res.locals.nonce });
    });
    app.get(`/ours/${i}`, securityHeaders(options), (_req, res) => {
      res.json({ ok: true, nonce: res.locals.nonce });
    });
  });
  server = await listen(app);
});
afterAll(() => server.stop());

describe('securityHeaders', () => {
  Object.keys(OPTIONS).forEach((name, i) => {
    it(`sets exactly helmet's headers, in helmet's order, with ${name}`, async () => {
      for (let round = 0; round < 2; round++) {
        const ours = await rawRequest(`${server.url}/ours/${i}`);
        const theirs = await rawRequest(`${server.url}/helmet/${i}`);
        const nonce = (answer: { body: string }) => JSON.parse(answer.body).nonce as string;
        // Per-request values are computed per request (each answer carries its own nonce).
        expect(ours.headers.map((line) => line.replace(nonce(ours), 'N'))).toEqual(
          theirs.headers.map((line) => line.replace(nonce(theirs), 'N')),
        );
        expect(ours.headers.some((line) => /^X-Powered-By/i.test(line))).toBe(false);
      }
    });
  });

  it('records a static policy once and computes a nonce policy on every request', async () => {
    const csp = async (i: number) =>
      (await rawRequest(`${server.url}/ours/${i}`)).headers.find((line) =>
        line.startsWith('Content-Security-Policy'),
      );
    expect(await csp(0)).toBe(await csp(0));
    expect(await csp(3)).not.toBe(await csp(3));
  });
});
