import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const ALLOWED = 'https://app.example.com';
let plain: TestServer;
let hardened: TestServer;
let proxied: TestServer;
beforeAll(async () => {
  plain = await startTestServer();
  hardened = await startTestServer({
    env: { KAS_MAX_BODY_MB: '1', KAS_CORS_ORIGINS: ALLOWED, KAS_AUTH_FAILURES_PER_MINUTE: '5' },
  });
  proxied = await startTestServer({
    env: { KAS_AUTH_FAILURES_PER_MINUTE: '5', KAS_TRUST_PROXY: 'loopback' },
  });
});
afterAll(async () => {
  await plain?.close();
  await hardened?.close();
  await proxied?.close();
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

  it('reads a large JSON body (parsed off the event loop) as it reads a small one, refusals included', async () => {
    // Over 256 kB: parsed in the CPU pool. A word only this document holds, to find it afterwards.
    const text = `${'lorem ipsum dolor sit amet '.repeat(24_000)} zanzibarquokka`;
    const ok = await hardened.request('POST', '/api/svc-api/ingestion', {
      key: hardened.adminKey,
      rawBody: JSON.stringify({
        document: { id: 'large-body', semantic_identifier: 'large', sections: [{ text }] },
      }),
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ document_id: 'large-body', already_existed: false });
    const found = await hardened.request('POST', '/api/admin/search', {
      key: hardened.adminKey,
      body: { query: 'zanzibarquokka', filters: {} },
    });
    expect((await found.json()).documents.map((d: { document_id: string }) => d.document_id)).toEqual([
      'large-body',
    ]);
    // Malformed, and well-formed but not an object or array (express's strict mode): refused as a
    // small malformed body is.
    const small = await hardened.request('POST', '/api/svc-api/ingestion', {
      key: hardened.adminKey,
      rawBody: '{"document": ',
    });
    const refusal = { status: small.status, body: await small.json() };
    expect(refusal).toEqual({
      status: 422,
      body: { error_code: 'VALIDATION_ERROR', detail: 'Malformed JSON in request body' },
    });
    for (const rawBody of [`{"document": {"sections": [${'"x",'.repeat(100_000)}`, JSON.stringify(text)]) {
      const bad = await hardened.request('POST', '/api/svc-api/ingestion', {
        key: hardened.adminKey,
        rawBody,
      });
      expect({ status: bad.status, body: await bad.json() }).toEqual(refusal);
    }
    // Validated by the procedure's schema like any body.
    const invalid = await hardened.request('POST', '/api/svc-api/ingestion', {
      key: hardened.adminKey,
      rawBody: JSON.stringify({ document: { semantic_identifier: 'no sections', padding: text } }),
    });
    expect(invalid.status).toBe(422);
  });

  it('refuses bad credentials from an address after too many failed authentications, never a valid key', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await hardened.request('GET', '/api/me', { key: `svck-${'x'.repeat(42)}${i}` });
      expect(res.status).toBe(401);
    }
    const blocked = await hardened.request('GET', '/api/me', { key: `svck-${'y'.repeat(43)}` });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await blocked.json()).error_code).toBe('RATE_LIMITED');
    expect((await hardened.request('GET', '/api/me')).status).toBe(429);
    // The same address with a valid key is served: one client's bad keys do not lock out the others.
    expect((await hardened.request('GET', '/api/me', { key: hardened.adminKey })).status).toBe(200);
    // X-Forwarded-For is ignored by default (KAS_TRUST_PROXY false): a forged one does not escape the block.
    const forged = await hardened.request('GET', '/api/me', {
      key: `svck-${'z'.repeat(43)}`,
      headers: { 'x-forwarded-for': '198.51.100.9' },
    });
    expect(forged.status).toBe(429);
  });

  it('behind a trusted proxy (KAS_TRUST_PROXY) counts failures per forwarded client, not per proxy', async () => {
    const from = (client: string, key: string) =>
      proxied.request('GET', '/api/me', { key, headers: { 'x-forwarded-for': client } });
    for (let i = 0; i < 5; i++)
      expect((await from('198.51.100.1', `svck-${'x'.repeat(42)}${i}`)).status).toBe(401);
    expect((await from('198.51.100.1', `svck-${'y'.repeat(43)}`)).status).toBe(429);
    // Another client behind the same proxy is not locked out, with a bad key or a good one.
    expect((await from('198.51.100.2', `svck-${'y'.repeat(43)}`)).status).toBe(401);
    expect((await from('198.51.100.2', proxied.adminKey)).status).toBe(200);
    expect((await from('198.51.100.1', proxied.adminKey)).status).toBe(200);
  });
});
