import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { readAll } from './chat-helpers.ts';

let plain: TestServer;
let crossOrigin: TestServer;
beforeAll(async () => {
  plain = await startTestServer();
  crossOrigin = await startTestServer({ env: { KAS_CORS_ORIGINS: 'https://app.example.com' } });
});
afterAll(async () => {
  await plain?.close();
  await crossOrigin?.close();
});

/** helmet's headers with kas's options: no HSTS (TLS ends in front of kas), images also as data: URLs. */
function expectSecurityHeaders(res: Response, resourcePolicy = 'same-origin') {
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("img-src 'self' data:");
  expect(csp).toContain("style-src 'self' 'unsafe-inline'");
  expect(csp).toContain("frame-ancestors 'self'");
  expect(csp).not.toContain('upgrade-insecure-requests');
  const others: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'content-security-policy') others[name] = value;
  });
  expect(others).toMatchObject({
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': resourcePolicy,
    'origin-agent-cluster': '?1',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-dns-prefetch-control': 'off',
    'x-download-options': 'noopen',
    'x-frame-options': 'SAMEORIGIN',
    'x-permitted-cross-domain-policies': 'none',
    'x-xss-protection': '0',
  });
  expect(res.headers.get('strict-transport-security')).toBeNull();
  expect(res.headers.get('x-powered-by')).toBeNull();
}

describe('REST bridge', () => {
  it('sends the security headers on every kind of answer', async () => {
    const answers = {
      health: await plain.request('GET', '/api/health'),
      'authenticated JSON': await plain.request('GET', '/api/admin/api-key', { key: plain.adminKey }),
      'no key': await plain.request('GET', '/api/admin/api-key'),
      'no route': await plain.request('GET', '/api/no-such-thing'),
      'invalid input': await plain.request('GET', '/api/persona/x', { key: plain.adminKey }),
      'no content': await plain.request('DELETE', '/api/admin/api-key/99999', { key: plain.adminKey }),
      '/api/trpc': await plain.request('GET', '/api/trpc/health.check'),
      'the chat stream': await plain.request('POST', '/api/chat/send-chat-message', {
        key: plain.adminKey,
        body: { message: 'hello' },
      }),
    };
    for (const [name, res] of Object.entries(answers)) {
      await res.arrayBuffer();
      expect.soft(() => expectSecurityHeaders(res), name).not.toThrow();
    }
    expect(answers['the chat stream'].headers.get('content-type')).toMatch(/^text\/event-stream/);
    expectSecurityHeaders(
      await crossOrigin.request('GET', '/api/admin/api-key', { key: crossOrigin.adminKey }),
      'cross-origin',
    );
  });

  it('answers with compact UTF-8 JSON, its byte length and no ETag', async () => {
    const name = 'naïve — 日本語 ✓';
    await plain.createKey('basic', name);
    const res = await plain.request('GET', '/api/admin/api-key', { key: plain.adminKey });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toBe(JSON.stringify(JSON.parse(text)));
    expect(JSON.parse(text)).toContainEqual(
      expect.objectContaining({ api_key_display: expect.any(String), api_key_name: name }),
    );
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(res.headers.get('etag')).toBeNull();
    const head = await plain.request('HEAD', '/api/admin/api-key', { key: plain.adminKey });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(res.headers.get('content-length'));
  });

  it('lets a route registered before the adapter answer its path', async () => {
    // POST /chat/send-chat-message is also chat.sendMessage's REST path: the hand-written route streams.
    const stream = await plain.request('POST', '/api/chat/send-chat-message', {
      key: plain.adminKey,
      body: { message: 'What is the vacation policy?' },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const lines = await readAll(stream);
    expect(lines.at(-1)).toMatchObject({ obj: { type: 'stop' } });
    const full = await plain.request('POST', '/api/chat/send-chat-message', {
      key: plain.adminKey,
      body: { message: 'What is the vacation policy?', stream: false },
    });
    expect(full.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await full.json()).toMatchObject({ message_id: expect.any(Number) });
    // A literal path is not taken by the parameterised one of the same method.
    const labels = await plain.request('GET', '/api/persona/labels', { key: plain.adminKey });
    expect(labels.status).toBe(200);
    expect(Array.isArray(await labels.json())).toBe(true);
  });
});
