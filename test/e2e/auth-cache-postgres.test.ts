import type { ChildProcess } from 'node:child_process';
import { createTestDatabase, type TestDatabase } from '@kas/server/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgProxy } from '../harness/pg-proxy.ts';
import { serve } from '../harness/process.ts';

// The auth cache on a shared Postgres (packages/server/src/auth/pg-auth-cache.ts): two kas processes on
// one database, a change made through A (or straight in SQL) must hold on the very next request through B,
// whose cache was warm.

const ADMIN_KEY = `svck-${'Q'.repeat(43)}`;
const RATE_LIMIT = 200;

interface Proc {
  url: string;
  child: ChildProcess;
}

/** A `kas serve` process without the worker, on the test's database. */
function startProcess(env: Record<string, string>): Promise<Proc> {
  return serve({ ...env, HOST: '127.0.0.1', KAS_LOG_LEVEL: 'error' }, 30_000, ['--no-worker']);
}

function call(p: Proc, method: string, path: string, key: string, body?: unknown): Promise<Response> {
  return fetch(`${p.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

describe('auth cache on a shared Postgres: invalidation across processes', () => {
  let db: TestDatabase;
  let sql: pg.Client;
  let a: Proc;
  let b: Proc;
  let proxy: Awaited<ReturnType<typeof startPgProxy>>;

  async function newKey(role = 'admin'): Promise<{ api_key: string; api_key_id: number }> {
    const res = await call(a, 'POST', '/api/admin/api-key', ADMIN_KEY, { name: `k-${Math.random()}`, role });
    expect(res.status).toBe(200);
    return (await res.json()) as { api_key: string; api_key_id: number };
  }

  /** Makes sure B answers `key` from its cache (two reads: the first fills it). */
  async function warm(key: string): Promise<void> {
    for (let i = 0; i < 2; i++) expect((await call(b, 'GET', '/api/admin/api-key', key)).status).toBe(200);
  }

  /** Waits until both processes' listeners are connected and acknowledging. */
  async function bothListening(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'kas-auth:%'`,
      );
      if (rows[0].n === 2) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the listeners did not (re)connect');
  }

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    const env = {
      ...db.env,
      KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
      KAS_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      KAS_AUTH_FAILURES_PER_MINUTE: '30',
    };
    // B reaches Postgres through a relay that can stall its listener connection.
    proxy = await startPgProxy(new URL(db.env.DATABASE_URL!), 'kas-auth-listener');
    a = await startProcess(env);
    b = await startProcess({ ...env, DATABASE_URL: proxy.url });
    sql = new pg.Client({ connectionString: db.env.DATABASE_URL });
    await sql.connect();
  }, 60_000);
  afterAll(async () => {
    await sql?.end();
    for (const p of [a, b]) if (p) p.child.kill('SIGTERM');
    await Promise.all(
      [a, b]
        .filter(Boolean)
        .map((p) => new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)))),
    );
    await proxy?.close();
    await db?.drop();
  });

  it('both processes listen, each under its own application_name', async () => {
    const { rows } = await sql.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'kas-auth:%'`,
    );
    expect(rows[0].n).toBe(2);
  });

  it('a key deleted through A is refused on the very next request through B', async () => {
    const key = await newKey();
    await warm(key.api_key);
    expect((await call(a, 'DELETE', `/api/admin/api-key/${key.api_key_id}`, ADMIN_KEY)).status).toBe(204);
    expect((await call(b, 'GET', '/api/admin/api-key', key.api_key)).status).toBe(401);
  });

  it('a role lowered through A is in force on the very next request through B', async () => {
    const key = await newKey();
    await warm(key.api_key);
    const patched = await call(a, 'PATCH', `/api/admin/api-key/${key.api_key_id}`, ADMIN_KEY, {
      role: 'basic',
    });
    expect(patched.status).toBe(200);
    expect((await call(b, 'GET', '/api/admin/api-key', key.api_key)).status).toBe(403);
  });

  it('a key created through A is in B’s cached key list at once', async () => {
    await warm(ADMIN_KEY);
    const key = await newKey('basic');
    const list = (await (await call(b, 'GET', '/api/admin/api-key', ADMIN_KEY)).json()) as {
      api_key_id: number;
    }[];
    expect(list.map((k) => k.api_key_id)).toContain(key.api_key_id);
  });

  it('a user deactivated through A is refused on the very next request through B', async () => {
    const key = await newKey();
    const me = (await (await call(b, 'GET', '/api/me', key.api_key)).json()) as { email: string };
    await warm(key.api_key);
    const res = await call(a, 'PATCH', '/api/manage/admin/deactivate-user', ADMIN_KEY, {
      user_email: me.email,
    });
    expect(res.status).toBe(200);
    expect((await call(b, 'GET', '/api/admin/api-key', key.api_key)).status).toBe(401);
  });

  it('a listener stalled on the network: the writer waits, then B stops serving from its cache', async () => {
    await bothListening();
    const key = await newKey();
    await warm(key.api_key);
    proxy.hold(true);
    try {
      // B gets neither the notification nor (later) its termination; A waits out its timeout, and B's
      // heartbeats go unanswered, so B reads the database again before A answers.
      const started = Date.now();
      expect((await call(a, 'DELETE', `/api/admin/api-key/${key.api_key_id}`, ADMIN_KEY)).status).toBe(204);
      expect(Date.now() - started).toBeGreaterThan(2_500);
      expect((await call(b, 'GET', '/api/admin/api-key', key.api_key)).status).toBe(401);
    } finally {
      proxy.hold(false);
    }
  });

  it('a process frozen through a revocation does not serve the revoked key when it wakes', async () => {
    await bothListening();
    const key = await newKey();
    await warm(key.api_key);
    b.child.kill('SIGSTOP');
    try {
      // A waits for B's acknowledgement, gives up after its timeout and terminates B's listener.
      const started = Date.now();
      expect((await call(a, 'DELETE', `/api/admin/api-key/${key.api_key_id}`, ADMIN_KEY)).status).toBe(204);
      expect(Date.now() - started).toBeGreaterThan(2_500);
      // The request reaches B while it is still frozen: on waking, B must not answer from its cache.
      const pending = call(b, 'GET', '/api/admin/api-key', key.api_key);
      await new Promise((r) => setTimeout(r, 50));
      b.child.kill('SIGCONT');
      expect((await pending).status).toBe(401);
    } finally {
      b.child.kill('SIGCONT');
    }
  });

  it('a change made straight in SQL invalidates both caches within a short wait', async () => {
    const key = await newKey();
    await warm(key.api_key);
    await sql.query('DELETE FROM api_keys WHERE id = $1', [key.api_key_id]);
    await new Promise((r) => setTimeout(r, 200));
    expect((await call(b, 'GET', '/api/admin/api-key', key.api_key)).status).toBe(401);
  });

  it('a process whose listener connection is killed stops serving from its cache', async () => {
    const key = await newKey();
    await warm(key.api_key);
    // Kill every listener, then delete the key without any notification (trigger off): only a process
    // that has switched its cache off answers 401.
    await sql.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'kas-auth:%'`,
    );
    await new Promise((r) => setTimeout(r, 20));
    await sql.query('BEGIN');
    await sql.query('ALTER TABLE api_keys DISABLE TRIGGER api_keys_auth_changed');
    await sql.query('DELETE FROM api_keys WHERE id = $1', [key.api_key_id]);
    await sql.query('ALTER TABLE api_keys ENABLE TRIGGER api_keys_auth_changed');
    await sql.query('COMMIT');
    expect((await call(b, 'GET', '/api/admin/api-key', key.api_key)).status).toBe(401);
    // Both listeners come back (backoff from 100 ms).
    await bothListening();
  });

  it('the rate limit holds across the two processes (within one batch per process)', async () => {
    const key = await newKey('basic');
    let accepted = 0;
    let last: Response | undefined;
    for (let i = 0; i < RATE_LIMIT + 40; i++) {
      last = await call(i % 2 ? a : b, 'GET', '/api/me', key.api_key);
      if (last.status === 200) accepted++;
      else expect(last.status).toBe(429);
    }
    const batch = Math.floor(RATE_LIMIT / 50);
    expect(accepted).toBeLessThanOrEqual(RATE_LIMIT);
    expect(accepted).toBeGreaterThanOrEqual(RATE_LIMIT - 2 * batch);
    expect(last?.headers.get('retry-after')).toBeTruthy();
  });

  // Last: it blocks this test's address for the rest of the minute.
  it('failed authentications counted on A block bad keys on B too, never a key B answers from its cache', async () => {
    await warm(ADMIN_KEY);
    // Earlier tests' refused keys count too: fail on A until A itself refuses the address.
    const statuses: number[] = [];
    for (let i = 0; i < 31 && statuses.at(-1) !== 429; i++)
      statuses.push((await call(a, 'GET', '/api/admin/api-key', `svck-wrong${i}`)).status);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses[0]).toBe(401);
    await new Promise((r) => setTimeout(r, 100));
    expect((await call(b, 'GET', '/api/admin/api-key', 'svck-wrong-on-b')).status).toBe(429);
    expect((await call(b, 'GET', '/api/admin/api-key', ADMIN_KEY)).status).toBe(200);
  });
});
