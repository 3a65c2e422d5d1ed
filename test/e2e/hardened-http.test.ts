import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const ALLOWED = 'https://app.example.com';
let plain: TestServer;
let hardened: TestServer;
beforeAll(async () => {
  plain = await startTestServer();
  hardened = await startTestServer({
    env: { KAS_MAX_BODY_MB: '1', KAS_CORS_ORIGINS: ALLOWED, KAS_AUTH_FAILURES_PER_MINUTE: '5' },
  });
});
afterAll(async () => {
  await plain?.close();
  await hardened?.close();
});

describe('hardened HTTP', () => {
  it('sends security headers, no X-Powered-By, and a CSP that keeps /api/docs to its own scripts', async () => {
    const docs = await fetch(`${plain.url}/api/docs/`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('x-powered-by')).toBeNull();
    expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
    expect(docs.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(docs.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const health = await fetch(`${plain.url}/api/health`);
    expect(health.headers.get('x-powered-by')).toBeNull();
  });

  it('has CORS off by default', async () => {
    const res = await fetch(`${plain.url}/api/health`, { headers: { origin: ALLOWED } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows exactly the origins of KAS_CORS_ORIGINS, preflight included', async () => {
    const allowed = await fetch(`${hardened.url}/api/health`, { headers: { origin: ALLOWED } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    const other = await fetch(`${hardened.url}/api/health`, { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${hardened.url}/api/admin/api-key`, {
      method: 'OPTIONS',
      headers: {
        origin: ALLOWED,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);
  });

  it('refuses a body over KAS_MAX_BODY_MB with 413 and the envelope', async () => {
    const res = await hardened.request('POST', '/api/svc-api/ingestion', {
      key: hardened.adminKey,
      rawBody: JSON.stringify({
        document: { semantic_identifier: 'big', sections: [{ text: 'x'.repeat(2_000_000) }] },
      }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error_code: 'PAYLOAD_TOO_LARGE', detail: expect.any(String) });
  });

  it('refuses an address after too many failed authentications, even with a valid key, until the window ends', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await hardened.request('GET', '/api/me', { key: `svck-${'x'.repeat(42)}${i}` });
      expect(res.status).toBe(401);
    }
    const blocked = await hardened.request('GET', '/api/me', { key: `svck-${'y'.repeat(43)}` });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await blocked.json()).error_code).toBe('RATE_LIMITED');
    expect((await hardened.request('GET', '/api/me', { key: hardened.adminKey })).status).toBe(429);
    // Another server (another address's budget) is unaffected.
    expect((await plain.request('GET', '/api/me', { key: plain.adminKey })).status).toBe(200);
  });
});
