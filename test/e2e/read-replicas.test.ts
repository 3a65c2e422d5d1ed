import { type RunningServer, startServer } from '@kas/rest-bridge';
import { apiKeysService, configFrom, documentsService } from '@kas/server';
import { apiKeyActor, searchService } from '@kas/server/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  const replicas = () => running.runtime.database.replicas!;
  /** Pauses replay on the replica; the pause takes effect at the next record, so one is written. */
  const pauseReplay = async () => {
    await onReplica.query('SELECT pg_wal_replay_pause()');
    await running.runtime.deps.db.selectNoFrom((eb) => eb.fn('txid_current', []).as('x')).execute();
    await until(
      async () =>
        (await onReplica.query(`SELECT pg_get_wal_replay_pause_state() AS s`)).rows[0].s === 'paused',
    );
  };
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
