import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom, parseAllowlist } from '../config.ts';
import { AddressGuard } from './address-guard.ts';
import {
  createOutbound,
  MAX_SLEPT_RETRY_AFTER_MS,
  type OutboundOptions,
  outboundOptionsFrom,
  retryAfterMs,
} from './outbound.ts';

let server: Server;
let port: number;
const hits = new Map<string, number>();

function handler(req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://x');
  hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
  switch (url.pathname) {
    case '/hello':
      res.setHeader('content-type', 'text/plain');
      return res.end('hello');
    case '/echo': {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            method: req.method,
            body: Buffer.concat(chunks).toString(),
            auth: req.headers.authorization ?? null,
          }),
        );
      });
      return;
    }
    case '/redirect':
      res.statusCode = 302;
      res.setHeader('location', '/hello');
      return res.end();
    case '/redirect-to-ip':
      res.statusCode = 301;
      res.setHeader('location', `http://127.0.0.1:${port}/hello`);
      return res.end();
    case '/loop':
      res.statusCode = 302;
      res.setHeader('location', '/loop');
      return res.end();
    case '/big-declared':
      res.setHeader('content-length', String(10_000));
      return res.end('x'.repeat(10_000));
    case '/big-chunked':
      res.write('x'.repeat(3000));
      res.write('x'.repeat(3000));
      return res.end('x'.repeat(3000));
    case '/hang':
      return;
    case '/drip': {
      res.write('a');
      return;
    }
    case '/rate-limited': {
      if ((hits.get(url.pathname) ?? 0) === 1) {
        res.statusCode = 429;
        res.setHeader('retry-after', '1');
        return res.end('slow down');
      }
      return res.end('ok now');
    }
    case '/always-503':
      res.statusCode = 503;
      return res.end('down');
    case '/quota-spent':
      // GitHub's primary rate limit: no Retry-After, only the quota headers.
      res.statusCode = 429;
      res.setHeader('x-ratelimit-remaining', '0');
      res.setHeader('x-ratelimit-reset', String(Math.floor(Date.now() / 1000) + 3600));
      return res.end('API rate limit exceeded');
    case '/retry-later':
      res.statusCode = 429;
      res.setHeader('retry-after', '3600');
      return res.end('tomorrow');
    default:
      res.statusCode = 404;
      return res.end('nope');
  }
}

const base: Omit<OutboundOptions, 'allowlist'> = {
  timeoutMs: 2000,
  totalTimeoutMs: 10_000,
  maxBytes: 5000,
  maxRedirects: 3,
  retries: 2,
  retryBaseMs: 10,
  maxRetryAfterMs: 5000,
};

beforeAll(async () => {
  server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('address guard', () => {
  const guard = new AddressGuard([]);
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a9fe:a9fe',
  ])('refuses %s', (address) => {
    expect(guard.allows('example.com', address)).toBe(false);
  });
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows %s', (address) => {
    expect(guard.allows('example.com', address)).toBe(true);
  });
  it('allows what the allowlist names: CIDRs, addresses, hosts', () => {
    const allowing = new AddressGuard(['10.0.0.0/8', '127.0.0.1', 'Wiki.Internal', 'fd00::/8']);
    expect(allowing.allows('x', '10.200.0.1')).toBe(true);
    expect(allowing.allows('x', '127.0.0.1')).toBe(true);
    expect(allowing.allows('x', '127.0.0.2')).toBe(false);
    expect(allowing.allows('wiki.internal', '192.168.0.5')).toBe(true);
    expect(allowing.allows('x', 'fd12::1')).toBe(true);
    expect(allowing.allows('x', '192.168.0.5')).toBe(false);
  });
  it('rejects malformed allowlist entries in the configuration', () => {
    expect(parseAllowlist('127.0.0.1, 10.0.0.0/8 ,wiki.internal').invalid).toEqual([]);
    expect(parseAllowlist('10.0.0.0/33,not a host,1.2.3.4/x').invalid).toEqual([
      '10.0.0.0/33',
      'not a host',
      '1.2.3.4/x',
    ]);
    expect(() => configFrom({ KAS_OUTBOUND_ALLOWLIST: '10.0.0.0/99' })).toThrow(/KAS_OUTBOUND_ALLOWLIST/);
    expect(outboundOptionsFrom(configFrom({ KAS_OUTBOUND_ALLOWLIST: '127.0.0.1,::1' })).allowlist).toEqual([
      '127.0.0.1',
      '::1',
    ]);
  });
});

describe('outbound fetch', () => {
  it('refuses loopback by address and by name (after DNS resolution) without the allowlist', async () => {
    const { fetch } = createOutbound({ ...base, allowlist: [] });
    await expect(fetch(`http://127.0.0.1:${port}/hello`)).rejects.toMatchObject({ code: 'BLOCKED_ADDRESS' });
    await expect(fetch(`http://localhost:${port}/hello`)).rejects.toMatchObject({ code: 'BLOCKED_ADDRESS' });
    await expect(fetch(`http://[::ffff:127.0.0.1]:${port}/hello`)).rejects.toMatchObject({
      code: 'BLOCKED_ADDRESS',
    });
    expect(hits.get('/hello') ?? 0).toBe(0);
  });

  it('reaches allowlisted addresses and behaves like fetch', async () => {
    const { fetch } = createOutbound({ ...base, allowlist: ['127.0.0.0/8'] });
    const res = await fetch(`http://127.0.0.1:${port}/hello`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(await res.text()).toBe('hello');
    const post = await fetch(
      new Request(`http://localhost:${port}/echo`, {
        method: 'POST',
        body: JSON.stringify({ a: 1 }),
        headers: { authorization: 'Bearer t' },
      }),
    );
    expect(await post.json()).toEqual({ method: 'POST', body: '{"a":1}', auth: 'Bearer t' });
    const missing = await fetch(`http://127.0.0.1:${port}/missing`);
    expect(missing.status).toBe(404);
  });

  it('follows redirects, re-checking every hop', async () => {
    const allowed = createOutbound({ ...base, allowlist: ['127.0.0.1'] });
    const res = await allowed.fetch(`http://127.0.0.1:${port}/redirect`);
    expect(res.redirected).toBe(true);
    expect(res.url).toBe(`http://127.0.0.1:${port}/hello`);
    expect(await res.text()).toBe('hello');
    const manual = await allowed.fetch(`http://127.0.0.1:${port}/redirect`, { redirect: 'manual' });
    expect(manual.status).toBe(302);
    await expect(allowed.fetch(`http://127.0.0.1:${port}/loop`)).rejects.toMatchObject({
      code: 'TOO_MANY_REDIRECTS',
    });

    const byName = createOutbound({ ...base, allowlist: ['localhost'] });
    const before = hits.get('/hello') ?? 0;
    await expect(byName.fetch(`http://localhost:${port}/redirect-to-ip`)).rejects.toMatchObject({
      code: 'BLOCKED_ADDRESS',
      message: expect.stringMatching(/KAS_OUTBOUND_ALLOWLIST/),
    });
    expect(hits.get('/hello') ?? 0).toBe(before);
  });

  it('caps response sizes, declared or streamed', async () => {
    const { fetch } = createOutbound({ ...base, allowlist: ['127.0.0.1'] });
    await expect(fetch(`http://127.0.0.1:${port}/big-declared`)).rejects.toMatchObject({ code: 'TOO_LARGE' });
    const res = await fetch(`http://127.0.0.1:${port}/big-chunked`);
    await expect(res.text()).rejects.toThrow();
    const roomy = await fetch(`http://127.0.0.1:${port}/big-chunked`, { outbound: { maxBytes: 100_000 } });
    expect((await roomy.text()).length).toBe(9000);
  });

  it('caps the wait for headers, for body pieces and for the whole exchange', async () => {
    const { fetch } = createOutbound({ ...base, allowlist: ['127.0.0.1'], retries: 0, timeoutMs: 300 });
    const started = Date.now();
    await expect(fetch(`http://127.0.0.1:${port}/hang`)).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(1500);
    const dripping = await fetch(`http://127.0.0.1:${port}/drip`);
    await expect(dripping.text()).rejects.toThrow();
    const total = createOutbound({
      ...base,
      allowlist: ['127.0.0.1'],
      retries: 0,
      timeoutMs: 5000,
      totalTimeoutMs: 400,
    });
    const t0 = Date.now();
    await expect(total.fetch(`http://127.0.0.1:${port}/hang`)).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('retries idempotent requests with backoff, honouring Retry-After', async () => {
    const { fetch } = createOutbound({ ...base, allowlist: ['127.0.0.1'] });
    const started = Date.now();
    const res = await fetch(`http://127.0.0.1:${port}/rate-limited`);
    expect(await res.text()).toBe('ok now');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(hits.get('/rate-limited')).toBe(2);

    const down = await fetch(`http://127.0.0.1:${port}/always-503`);
    expect(down.status).toBe(503);
    expect(hits.get('/always-503')).toBe(3);
    await fetch(`http://127.0.0.1:${port}/always-503`, { method: 'POST', body: 'x' });
    expect(hits.get('/always-503')).toBe(4);

    const t0 = Date.now();
    const later = await fetch(`http://127.0.0.1:${port}/retry-later`);
    expect(later.status).toBe(429);
    expect(later.headers.get('retry-after')).toBe('3600');
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('never retries a spent quota (x-ratelimit-remaining: 0): the caller schedules the wait', async () => {
    const { fetch } = createOutbound({ ...base, allowlist: ['127.0.0.1'] });
    const spent = await fetch(`http://127.0.0.1:${port}/quota-spent`);
    expect(spent.status).toBe(429);
    expect(hits.get('/quota-spent')).toBe(1);
  });

  it('sleeps through a few seconds of Retry-After at most by default', () => {
    expect(MAX_SLEPT_RETRY_AFTER_MS).toBeLessThanOrEqual(5000);
    expect(outboundOptionsFrom(configFrom({})).maxRetryAfterMs).toBe(MAX_SLEPT_RETRY_AFTER_MS);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('5')).toBe(5000);
    expect(retryAfterMs(new Date(20_000).toUTCString(), 10_000)).toBe(10_000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });
});
