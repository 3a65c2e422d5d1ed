import { type AddressInfo, createServer } from 'node:net';
import { type RunningServer, startServer } from '@kas/rest-bridge';
import { apiKeysService, configFrom, createDatabase, documentsService } from '@kas/server';
import { apiKeyActor, searchService } from '@kas/server/testing';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, startPostgres } from '../harness/postgres.ts';

const ADMIN_KEY = `svck-${'R'.repeat(43)}`;
const MAX_LAG_MS = 1500;

async function until(condition: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('reads over a Postgres streaming replica (DATABASE_READ_URLS)', () => {
  let primary: PostgresServer;
  let replica: PostgresServer;
  let running: RunningServer;
  let onReplica: pg.Client;

  beforeAll(async () => {
    primary = await startPostgres();
    replica = await primary.startReplica();
    onReplica = new pg.Client({ connectionString: replica.url });
    await onReplica.connect();
    running = await startServer(
      configFrom({
        PORT: '0',
        DATABASE_URL: primary.url,
        DATABASE_READ_URLS: replica.url,
        KAS_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
        KAS_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
        KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
        KAS_RATE_LIMIT_PER_MINUTE: '0',
        KAS_LOG_LEVEL: process.env.KAS_TEST_LOG_LEVEL ?? 'silent',
      }),
      { worker: false },
    );
  }, 60_000);
  afterAll(async () => {
    await running?.close();
    await onReplica?.end().catch(() => {});
    await replica?.stop();
    await primary?.stop();
  });

  // A failed test must not leave replay paused for the next (the last one stops the replica).
  afterEach(async () => {
    await onReplica.query('SELECT pg_wal_replay_resume()').catch(() => {});
  });

  const replicas = () => running.runtime.database.replicas!;
  /**
   * Pauses replay on the replica; the pause takes effect at the next record, so one is written. A pause
   * while replay holds a table's exclusive lock (kas's maintenance, autovacuum cutting a table's tail)
   * would keep the replica's reads waiting for it, and the primary would answer them after 1 s (the
   * test below): the pause is taken again until replay holds none, so the replica answers.
   */
  const pauseReplay = () =>
    until(async () => {
      await onReplica.query('SELECT pg_wal_replay_pause()');
      await running.runtime.deps.db.selectNoFrom((eb) => eb.fn('txid_current', []).as('x')).execute();
      await until(
        async () =>
          (await onReplica.query(`SELECT pg_get_wal_replay_pause_state() AS s`)).rows[0].s === 'paused',
      );
      // pg_locks on a standby shows the locks replay holds for the transactions it replays.
      const { rows } = await onReplica.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'relation' AND mode = 'AccessExclusiveLock'`,
      );
      if (rows[0].n === 0) return true;
      await onReplica.query('SELECT pg_wal_replay_resume()');
      return false;
    });
  const usable = () => replicas().status()[0]!.usable;
  const adminSearch = async (query: string): Promise<string[]> => {
    const res = await fetch(`${running.url}/api/admin/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, filters: {} }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { documents: { document_id: string }[] };
    return body.documents.map((d) => d.document_id);
  };
  const ingest = (id: string, text: string, ccPairId?: number) =>
    documentsService.ingestDocument({
      ctx: running.runtime.deps,
      input: {
        document: { id, semantic_identifier: id, sections: [{ text }] },
        cc_pair_id: ccPairId ?? null,
      },
    });

  it('serves searches from the replica, and skips it once it lags beyond the bound', async () => {
    await ingest('first', 'Capybara grooming schedule.');
    await until(usable);
    await until(async () => (await adminSearch('capybara')).includes('first'));

    await pauseReplay();
    await ingest('second', 'Capybara feeding schedule.');
    // The replica has not replayed the write and is within the bound: it answers, without the document.
    expect(await adminSearch('capybara feeding')).not.toContain('second');
    // Once it is further behind than the bound, it is skipped and the primary answers.
    await until(() => !usable(), MAX_LAG_MS * 4);
    expect(replicas().status()[0]).toMatchObject({ up: true, usable: false });
    expect(await adminSearch('capybara feeding')).toContain('second');

    await onReplica.query('SELECT pg_wal_replay_resume()');
    await until(usable);
    expect(await adminSearch('capybara feeding')).toContain('second');
  });

  it('never applies access rules older than the primary’s: a replica behind an access change is skipped', async () => {
    const deps = running.runtime.deps;
    const key = await apiKeysService.createApiKey({ ctx: deps, input: { role: 'basic', name: 'reader' } });
    const [group] = await deps.db
      .insertInto('user_groups')
      .values({ name: 'okapi readers' })
      .returning('id')
      .execute();
    await deps.db
      .insertInto('user_group_members')
      .values({ group_id: group!.id, user_id: key.user_id })
      .execute();
    const pair = await documentsService.createCcPair({
      ctx: deps,
      input: { name: 'okapi pair', access_type: 'private', group_ids: [group!.id] },
    });
    await ingest('okapi', 'Okapi enclosure blueprint.', pair.cc_pair_id);
    const reader = apiKeyActor({ user_id: key.user_id, role: 'basic', api_key_id: key.api_key_id });
    const sees = async () =>
      (await searchService.searchChunks({ ctx: deps, actor: reader, query: 'okapi enclosure' })).some(
        (c) => c.document_id === 'okapi',
      );
    await until(usable);
    await until(sees);

    await pauseReplay();
    // A change made outside kas too: the database's triggers announce it.
    await deps.db.deleteFrom('user_group_members').where('user_id', '=', key.user_id).execute();
    // Well within the lag bound: only the access change keeps the stale replica out.
    expect(await sees()).toBe(false);
    expect(usable()).toBe(false);

    await onReplica.query('SELECT pg_wal_replay_resume()');
    await until(usable);
    expect(await sees()).toBe(false);
  });

  it('serves from the primary a read that waits on a lock replay holds, instead of waiting for replay', async () => {
    // A lag bound long enough that the paused replica stays in use for the whole test.
    const handle = await createDatabase(
      configFrom({
        DATABASE_URL: primary.url,
        DATABASE_READ_URLS: replica.url,
        KAS_REPLICA_MAX_LAG_MS: '600000',
        KAS_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
      }),
    );
    const onPrimary = new pg.Client({ connectionString: primary.url });
    await onPrimary.connect();
    try {
      const router = handle.replicas!;
      await until(() => router.status()[0]!.usable);
      // The primary takes the table's exclusive lock (as DDL or vacuum cutting its tail does); the
      // replica replays it, then pauses before the commit that would release it.
      await onPrimary.query('BEGIN');
      await onPrimary.query('LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE');
      // The lock's record reaches the replica once written out: a committed transaction flushes it.
      const flusher = new pg.Client({ connectionString: primary.url });
      await flusher.connect();
      await flusher.query('SET synchronous_commit = on');
      const { rows } = await flusher.query('SELECT pg_current_wal_insert_lsn()::text AS lsn, txid_current()');
      await flusher.end();
      await until(
        async () =>
          (await onReplica.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [rows[0].lsn]))
            .rows[0].ok,
      );
      await onReplica.query('SELECT pg_wal_replay_pause()');
      await onPrimary.query('COMMIT');
      await until(
        async () =>
          (await onReplica.query(`SELECT pg_get_wal_replay_pause_state() AS s`)).rows[0].s === 'paused',
      );
      expect(router.status()[0]!.usable).toBe(true);
      // What pauseReplay looks for: the replica shows the lock replay holds.
      const held = await onReplica.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'relation' AND mode = 'AccessExclusiveLock'`,
      );
      expect(held.rows[0].n).toBeGreaterThan(0);
      // On the replica this read would wait until replay resumes; the primary answers it.
      const read = handle.read
        .selectFrom('chunks')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      const answer = await Promise.race([
        read.then((row) => `${row.n} chunks`),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 15_000)),
      ]);
      expect(answer).toMatch(/^\d+ chunks$/);
    } finally {
      await onReplica.query('SELECT pg_wal_replay_resume()');
      await onPrimary.end();
      await handle.close();
    }
  });

  it('marks down a replica that accepts connections but never answers, and reads from the primary', async () => {
    // A host that takes the TCP connection and says nothing (a hung server, a half-open network path).
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const opened = createDatabase(
        configFrom({
          DATABASE_URL: primary.url,
          DATABASE_READ_URLS: `postgres://kas:kas@127.0.0.1:${port}/postgres`,
          KAS_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
        }),
      );
      const handle = await Promise.race([
        opened,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('still starting')), 20_000)),
      ]);
      try {
        expect(handle.replicas!.status()[0]).toMatchObject({ up: false, usable: false });
        const row = await handle.read
          .selectFrom('chunks')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow();
        expect(Number(row.n)).toBeGreaterThan(0);
      } finally {
        await handle.close();
      }
    } finally {
      silent.close();
    }
  });

  it('fails reads over to the primary when the replica stops', async () => {
    await until(usable);
    await onReplica.end();
    await replica.stop();
    await ingest('third', 'Capybara nap schedule.');
    // A read may meet the replica before a check marks it down: it is taken from the primary instead.
    expect(await adminSearch('capybara nap')).toContain('third');
    await until(() => !replicas().status()[0]!.up);
    expect(replicas().status()[0]).toMatchObject({ up: false, usable: false });
    expect(await adminSearch('capybara nap')).toContain('third');
  });
});
