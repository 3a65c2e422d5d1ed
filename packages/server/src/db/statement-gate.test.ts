import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../config.ts';
import { createTestDatabase, type TestDatabase, testDbKind } from '../testing/test-runtime.ts';
import { createDatabase, type DatabaseHandle, inBackground } from './database.ts';

/**
 * Which settles first: a request's long statement, or a background statement sent 50 ms after it
 * (on another pooled connection, so only kas's admission control can hold it back).
 */
async function firstToFinish(database: DatabaseHandle, requestSeconds: number): Promise<string[]> {
  const order: string[] = [];
  const request = sql`SELECT pg_sleep(${requestSeconds})`
    .execute(database.db)
    .then(() => order.push('request'));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const background = inBackground(() => sql`SELECT 1`.execute(database.db)).then(() =>
    order.push('background'),
  );
  await Promise.all([request, background]);
  return order;
}

describe.runIf(testDbKind() === 'postgres')('background statements on Postgres', () => {
  let testDb: TestDatabase;
  const open: DatabaseHandle[] = [];
  const connect = async (yieldMs: string) => {
    const database = await createDatabase(
      configFrom({ ...testDb.env, KAS_BACKGROUND_YIELD_MS: yieldMs }),
      testDb.dbOptions,
    );
    open.push(database);
    return database;
  };
  beforeAll(async () => {
    testDb = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    for (const database of open) await database.close();
    await testDb.drop();
  });

  it("wait while a request's statement runs", async () => {
    expect(await firstToFinish(await connect('10000'), 0.4)).toEqual(['request', 'background']);
  });

  it('go once they have waited KAS_BACKGROUND_YIELD_MS', async () => {
    expect(await firstToFinish(await connect('100'), 2)).toEqual(['background', 'request']);
  });

  it('never wait with KAS_BACKGROUND_YIELD_MS=0', async () => {
    expect(await firstToFinish(await connect('0'), 1)).toEqual(['background', 'request']);
  });

  it('run at once when no request runs, and commit their transactions', async () => {
    const database = await connect('10000');
    await sql`CREATE TABLE gated (id int PRIMARY KEY)`.execute(database.db);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await inBackground(() =>
      database.db.transaction().execute(async (trx) => {
        await sql`INSERT INTO gated VALUES (1)`.execute(trx);
      }),
    );
    expect(performance.now() - started).toBeLessThan(5000);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM gated`.execute(database.db);
    expect(rows[0]?.n).toBe(1);
  });
});
