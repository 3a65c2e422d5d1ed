import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const servers: TestServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.close().catch(() => {});
});

async function server(options: Parameters<typeof startTestServer>[0]) {
  const s = await startTestServer(options);
  servers.push(s);
  return s;
}

describe.each(['pglite', 'postgres'] as const)('rate limiting on %s', (db) => {
  it('answers 429 RATE_LIMITED with Retry-After and RateLimit-* headers past the per-key limit', async () => {
    const s = await server({ db, env: { KAS_RATE_LIMIT_PER_MINUTE: '3' } });
    const other = await s.createKey('admin'); // the admin key's first request of the minute
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 3; i++) {
      last = await s.request('GET', '/api/admin/api-key', { key: s.adminKey });
      statuses.push(last.status);
      if (i === 0) {
        expect(last.headers.get('ratelimit-limit')).toBe('3');
        expect(last.headers.get('ratelimit-remaining')).toBe('1');
        expect(Number(last.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
      }
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await last!.json()).toEqual({
      error_code: 'RATE_LIMITED',
      detail: expect.stringMatching(/3 requests per minute/),
    });
    // The limit is per key: another key has its own budget.
    expect((await s.request('GET', '/api/admin/api-key', { key: other.key })).status).toBe(200);
  });
});

describe('several processes on one Postgres', () => {
  it('revocation, regeneration and role changes take effect on the next request in every process', async () => {
    const a = await server({ db: 'postgres' });
    const url = new URL(a.running.runtime.deps.config.DATABASE_URL!);
    const b = await server({ db: 'postgres', env: { DATABASE_URL: url.toString() } });
    const key = await a.createKey('admin');
    expect((await b.request('GET', '/api/admin/api-key', { key: key.key })).status).toBe(200);
    await a.request('PATCH', `/api/admin/api-key/${key.api_key_id}`, {
      key: a.adminKey,
      body: { role: 'basic' },
    });
    expect((await b.request('GET', '/api/admin/api-key', { key: key.key })).status).toBe(403);
    const regenerated = await (
      await a.request('POST', `/api/admin/api-key/${key.api_key_id}/regenerate`, { key: a.adminKey })
    ).json();
    expect((await b.request('GET', '/api/health', {})).status).toBe(200);
    expect((await b.request('GET', '/api/admin/api-key', { key: key.key })).status).toBe(401);
    await a.request('DELETE', `/api/admin/api-key/${key.api_key_id}`, { key: a.adminKey });
    expect((await b.request('GET', '/api/admin/api-key', { key: regenerated.api_key })).status).toBe(401);
  });

  it('the Postgres rate-limit store holds the limit across processes', async () => {
    const a = await server({ db: 'postgres', env: { KAS_RATE_LIMIT_PER_MINUTE: '4' } });
    const url = a.running.runtime.deps.config.DATABASE_URL!;
    const b = await server({ db: 'postgres', env: { DATABASE_URL: url, KAS_RATE_LIMIT_PER_MINUTE: '4' } });
    const statuses = [];
    for (const s of [a, b, a, b, a])
      statuses.push((await s.request('GET', '/api/admin/api-key', { key: a.adminKey })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });
});

describe('failures', () => {
  it('a crash is a 500 INTERNAL_ERROR with a fixed detail and nothing internal', async () => {
    const s = await server({ db: 'postgres' });
    const client = new pg.Client({ connectionString: s.running.runtime.deps.config.DATABASE_URL });
    await client.connect();
    await client.query('ALTER TABLE api_keys RENAME TO api_keys_gone');
    await client.end();
    const res = await s.request('GET', '/api/admin/api-key', { key: s.adminKey });
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body).toEqual({
      error_code: 'INTERNAL_ERROR',
      detail: 'An internal error occurred. It has been logged.',
    });
    expect(JSON.stringify(body)).not.toMatch(/api_keys|relation|select/i);
  });
});

/** Debian's Chromium: CI installs it (`.ci/run`); elsewhere the browser test is skipped without it. */
const CHROMIUM = '/usr/bin/chromium';

describe.skipIf(!existsSync(CHROMIUM) && !process.env.CI)('API reference', () => {
  it('renders /api/docs in a real browser with the API key operations', async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `Chromium is missing (${CHROMIUM}): .ci/run installs Debian's chromium package as root`,
      );
    const s = await server({ db: 'pglite' });
    const profile = mkdtempSync(join(tmpdir(), 'kas-chromium-'));
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      const external: string[] = [];
      page.on('request', (request) => {
        if (!request.url().startsWith(s.url) && !request.url().startsWith('data:'))
          external.push(request.url());
      });
      await page.goto(`${s.url}/api/docs`);
      await page.getByText('Revoke an API key').first().waitFor({ timeout: 15_000 });
      const text = await page.textContent('body');
      expect(text).toContain('kas API');
      expect(text).toContain('Revoke an API key');
      const screenshot = await page.screenshot({ path: join(profile, 'docs.png'), fullPage: false });
      expect(screenshot.byteLength).toBeGreaterThan(10_000);
      expect(external).toEqual([]);

      // A pasted key is not kept in browser storage (any script of the origin could read it), and a
      // key an earlier version stored there is removed.
      await page.evaluate(() => window.localStorage.setItem('authorized', '{"bearerAuth":"svck-old"}'));
      await page.reload();
      await page.getByText('Revoke an API key').first().waitFor({ timeout: 15_000 });
      const stored = await page.evaluate(() => {
        (
          window as unknown as { ui: { preauthorizeApiKey(name: string, key: string): void } }
        ).ui.preauthorizeApiKey('bearerAuth', 'svck-pasted');
        return JSON.stringify({ ...window.localStorage, ...window.sessionStorage });
      });
      expect(stored).not.toContain('svck-');
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    }
  });
});
