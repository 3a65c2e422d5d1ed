import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../config.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { testDbKind } from '../testing/test-runtime.ts';
import { createDatabase, type Db, migrateToLatest, retryOnConflict } from './database.ts';

const t = useTestRuntime();
beforeAll(async () => {
  await sql`CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)`.execute(t.deps.db);
  await sql`INSERT INTO counter VALUES (1, 0)`.execute(t.deps.db);
});

describe('database', () => {
  it.runIf(testDbKind() === 'postgres')(
    "runs a deadlock's victim again: both transactions commit",
    async () => {
      const { db } = t.deps;
      await sql`CREATE TABLE pair (id int PRIMARY KEY, n int NOT NULL)`.execute(db);
      await sql`INSERT INTO pair VALUES (1, 0), (2, 0)`.execute(db);
      let both!: () => void;
      const firstLocks = new Promise<void>((resolve) => {
        both = resolve;
      });
      let tries = 0;
      // Each locks one row, then waits for the other's first lock, then asks for the other's row.
      const lockInOrder = (first: number, second: number) =>
        retryOnConflict(() =>
          db.transaction().execute(async (trx) => {
            tries++;
            await sql`UPDATE pair SET n = n + 1 WHERE id = ${first}`.execute(trx);
            if (tries <= 2) {
              if (tries === 2) both();
              await firstLocks;
            }
            await sql`UPDATE pair SET n = n + 1 WHERE id = ${second}`.execute(trx);
          }),
        );
      await Promise.all([lockInOrder(1, 2), lockInOrder(2, 1)]);
      expect(tries).toBe(3);
      const rows = await sql<{ n: number }>`SELECT n FROM pair ORDER BY id`.execute(db);
      expect(rows.rows.map((r) => r.n)).toEqual([2, 2]);
    },
  );

  it('never commits a rolled-back transaction when transactions overlap', async () => {
    const { db } = t.deps;
    await sql`CREATE TABLE ledger (id serial PRIMARY KEY, note text NOT NULL)`.execute(db);
    const work = Array.from({ length: 20 }, (_, i) =>
      db
        .transaction()
        .execute(async (trx) => {
          await sql`INSERT INTO ledger (note) VALUES (${`tx-${i}`})`.execute(trx);
          await new Promise((r) => setTimeout(r, 5));
          if (i % 2 === 1) throw new Error(`abort ${i}`);
        })
        .then(
          () => 'committed',
          () => 'rolled back',
        ),
    );
    const outcomes = await Promise.all(work);
    expect(outcomes.filter((o) => o === 'committed')).toHaveLength(10);
    const rows = await sql<{ note: string }>`SELECT note FROM ledger ORDER BY id`.execute(db);
    expect(rows.rows.map((r) => r.note).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `tx-${i * 2}`).sort(),
    );
  });

  it('serialises concurrent read-modify-write transactions', async () => {
    const { db } = t.deps;
    await Promise.all(
      Array.from({ length: 30 }, () =>
        db.transaction().execute(async (trx) => {
          const { rows } = await sql<{ n: number }>`SELECT n FROM counter WHERE id = 1 FOR UPDATE`.execute(
            trx,
          );
          await sql`UPDATE counter SET n = ${rows[0]!.n + 1} WHERE id = 1`.execute(trx);
        }),
      ),
    );
    const { rows } = await sql<{ n: number }>`SELECT n FROM counter WHERE id = 1`.execute(db);
    expect(rows[0]!.n).toBe(30);
  });

  it('returns counts, int8 and ids with the same JS types on both databases', async () => {
    const { db } = t.deps;
    const row = await db
      .selectFrom('api_keys')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.max('id').as('max_id')])
      .executeTakeFirstOrThrow();
    expect(typeof row.n).toBe('number');
    expect(typeof row.max_id).toBe('number');
    const { rows } = await sql<{
      big: number;
      num: number;
      ts: Date;
    }>`SELECT 9007199254740::int8 AS big, 1.5::numeric AS num, now() AS ts`.execute(db);
    expect(rows[0]).toMatchObject({ big: 9007199254740, num: 1.5 });
    expect(rows[0]!.ts).toBeInstanceOf(Date);
  });

  it('applies a migration numbered below the last applied one (branches land in any order)', async () => {
    const { db } = t.deps;
    // As if 0015 had landed after the later migrations had already run here: undo it and forget it.
    await sql`DROP TABLE tool_groups, mcp_server_groups`.execute(db);
    await sql`ALTER TABLE tools DROP COLUMN group_scoped`.execute(db);
    await sql`ALTER TABLE mcp_servers DROP COLUMN group_scoped`.execute(db);
    await sql`DELETE FROM kysely_migration WHERE name = '0015_action_groups'`.execute(db);
    expect(await migrateToLatest(db)).toEqual(['0015_action_groups']);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tool_groups`.execute(db);
    expect(rows[0]!.n).toBe(0);
  });
});

describe.skipIf(testDbKind() !== 'pglite')('embedded database settings', () => {
  it('sizes PGlite’s buffer cache from KAS_PGLITE_SHARED_BUFFERS_MB (16 MB by default, not 128)', async () => {
    const shown = async (db: Db) =>
      (await sql<{ shared_buffers: string }>`SHOW shared_buffers`.execute(db)).rows[0]?.shared_buffers;
    expect(await shown(t.deps.db)).toBe('16MB');
    const database = await createDatabase(configFrom({ KAS_PGLITE_SHARED_BUFFERS_MB: '24' }), {
      inMemory: true,
    });
    try {
      expect(await shown(database.db)).toBe('24MB');
      expect(database.wasmMemoryBytes?.()).toBeGreaterThan(0);
    } finally {
      await database.close();
    }
  });
});

describe.skipIf(testDbKind() !== 'pglite')('slow statements', () => {
  it('reports a statement over slowQueryMs with its SQL and not its parameters; none with 0', async () => {
    const reported: { sql: string; ms: number }[] = [];
    const onSlowQuery = (statement: string, ms: number) => reported.push({ sql: statement, ms });
    const database = await createDatabase(configFrom({}), { inMemory: true, slowQueryMs: 40, onSlowQuery });
    const quiet = await createDatabase(configFrom({}), { inMemory: true, slowQueryMs: 0, onSlowQuery });
    try {
      await sql`SELECT pg_sleep(0.06), ${'secret-value'}::text AS v`.execute(database.db);
      await sql`SELECT 1`.execute(database.db);
      await sql`SELECT pg_sleep(0.06)`.execute(quiet.db);
      expect(reported).toHaveLength(1);
      expect(reported[0]!.sql).toMatch(/pg_sleep\(0\.06\), \$1::text/);
      expect(reported[0]!.sql).not.toContain('secret-value');
      expect(reported[0]!.ms).toBeGreaterThanOrEqual(40);
    } finally {
      await database.close();
      await quiet.close();
    }
  });
});
