import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../config.ts';
import { testDbKind } from '../testing/test-runtime.ts';
import {
  createDatabase,
  type DatabaseHandle,
  inBackground,
  inOneTurn,
  isUniqueViolation,
  outsideBackground,
} from './database.ts';
import { isInBackground } from './pglite-thread.ts';

/** How late a 5 ms timer fires while `work` runs. */
async function timerDelay(work: Promise<unknown>): Promise<number> {
  let worst = 0;
  let done = false;
  void work.finally(() => {
    done = true;
  });
  while (!done) {
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    worst = Math.max(worst, performance.now() - started - 5);
  }
  return worst;
}

describe('background work', () => {
  it("reaches a worker's timers (its heartbeats), which outsideBackground runs as a request's work", async () => {
    const inTimer = await inBackground(
      () =>
        new Promise<boolean[]>((resolve) =>
          setTimeout(() => resolve([isInBackground(), outsideBackground(() => isInBackground())]), 1),
        ),
    );
    expect(inTimer).toEqual([true, false]);
  });
});

describe.runIf(testDbKind() === 'pglite')('the embedded database on its own thread', () => {
  let dir: string;
  let database: DatabaseHandle;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kas-pglite-thread-'));
    database = await createDatabase(configFrom({ KAS_DATA_DIR: dir }));
    await sql`CREATE TABLE t (id int PRIMARY KEY, v text)`.execute(database.db);
  });
  afterAll(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves the event loop free while a statement runs', async () => {
    const delay = await timerDelay(sql`SELECT pg_sleep(0.4)`.execute(database.db));
    expect(delay).toBeLessThan(150);
  });

  it('keeps transactions, their rollbacks and the errors’ codes', async () => {
    const { db } = database;
    await db.transaction().execute(async (trx) => {
      await sql`INSERT INTO t VALUES (1, 'one')`.execute(trx);
    });
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await sql`INSERT INTO t VALUES (2, 'two')`.execute(trx);
        await sql`INSERT INTO t VALUES (1, 'again')`.execute(trx);
      })
      .catch((error: unknown) => error);
    expect(isUniqueViolation(failed)).toBe(true);
    expect((failed as { constraint?: string }).constraint).toBe('t_pkey');
    const rows = await sql<{ id: number; v: string }>`SELECT id, v FROM t ORDER BY id`.execute(db);
    expect(rows.rows).toEqual([{ id: 1, v: 'one' }]);
    // Concurrent transactions each see only their own writes until they commit.
    await Promise.all(
      [10, 20, 30].map((base) =>
        db.transaction().execute(async (trx) => {
          for (let i = 0; i < 5; i++) await sql`INSERT INTO t VALUES (${base + i}, 'x')`.execute(trx);
          const mine = await sql<{
            n: number;
          }>`SELECT count(*)::int AS n FROM t WHERE id >= ${base} AND id < ${base + 10}`.execute(trx);
          expect(mine.rows[0]!.n).toBe(5);
        }),
      ),
    );
    const count = await sql<{ n: number }>`SELECT count(*)::int AS n FROM t`.execute(db);
    expect(count.rows[0]!.n).toBe(16);
  });

  it('gives the connection to a waiting request before the statements background work queued', async () => {
    const { db } = database;
    // Eight background chains (say, ingestion batches and maintenance), each with a statement queued.
    const background = inBackground(() =>
      Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 4; i++) await sql`SELECT pg_sleep(0.05)`.execute(db);
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    const started = performance.now();
    await sql`SELECT 1`.execute(db);
    const waited = performance.now() - started;
    await background;
    // The statement in progress (50 ms), not the seven queued before the request (350 ms more).
    expect(waited).toBeLessThan(200);
  });

  it("runs a turn's statements one after another, bulk statements waiting until it ends", async () => {
    const { db } = database;
    await sql`CREATE TABLE turn_log (seq serial PRIMARY KEY, who text)`.execute(db);
    let bulkDone = false;
    // Bulk work: a stream of short statements, each logging itself.
    const bulk = inBackground(async () => {
      for (let i = 0; i < 40; i++)
        await sql`INSERT INTO turn_log (who) SELECT 'bulk' FROM pg_sleep(0.005)`.execute(db);
      bulkDone = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // A search-like turn: three statements with a little of the caller's work between them.
    await inOneTurn(async () => {
      for (const step of ['a', 'b', 'c']) {
        await sql`INSERT INTO turn_log (who) VALUES (${step})`.execute(db);
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
    // Outside a turn the same statements queue again each time, bulk statements going in between.
    for (const step of ['x', 'y', 'z']) {
      await sql`INSERT INTO turn_log (who) VALUES (${step})`.execute(db);
      await new Promise((resolve) => setTimeout(resolve, 8));
    }
    await bulk;
    expect(bulkDone).toBe(true);
    const order = (await sql<{ who: string }>`SELECT who FROM turn_log ORDER BY seq`.execute(db)).rows.map(
      (r) => r.who,
    );
    const at = (who: string) => order.indexOf(who);
    expect([at('b') - at('a'), at('c') - at('b')]).toEqual([1, 1]);
    // (the control: without a turn, bulk statements ran between the request's statements)
    expect(at('z') - at('x')).toBeGreaterThan(2);
  });
});
