import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { configFrom } from '../config.ts';
import { createTestDatabase, type TestDatabase, testDbKind } from '../testing/test-runtime.ts';
import { createDatabase, type DatabaseHandle, inBackground } from './database.ts';
import { StatementGate } from './statement-gate.ts';

/** A statement that ends when `end` is called; `started` records when it began. */
function held(log: string[], name: string) {
  let end!: () => void;
  const done = new Promise<void>((resolve) => {
    end = resolve;
  });
  return {
    run: () => {
      log.push(`${name} started`);
      return done.then(() => log.push(`${name} ended`));
    },
    end,
  };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('background statements take turns', () => {
  it('run at most maxBackground at once, first come first served', async () => {
    const gate = new StatementGate({ lingerMs: 0, maxWaitMs: 0, maxBackground: 2 });
    const log: string[] = [];
    const statements = ['a', 'b', 'c', 'd'].map((name) => held(log, name));
    const runs = statements.map((s) => inBackground(() => gate.run(s.run)));
    await turn();
    expect(log).toEqual(['a started', 'b started']);
    expect(gate.backgroundInFlight).toBe(2);
    statements[1]!.end();
    await turn();
    expect(log).toEqual(['a started', 'b started', 'b ended', 'c started']);
    statements[0]!.end();
    statements[2]!.end();
    statements[3]!.end();
    await Promise.all(runs);
    expect(log.filter((l) => l.endsWith('started'))).toEqual([
      'a started',
      'b started',
      'c started',
      'd started',
    ]);
    expect(gate.backgroundInFlight).toBe(0);
  });

  it('get extra turns while a bulk load asks for them, and count how long requests have been absent', async () => {
    const gate = new StatementGate({ lingerMs: 0, maxWaitMs: 0, maxBackground: 1 });
    const log: string[] = [];
    const statements = ['a', 'b', 'c'].map((name) => held(log, name));
    const runs = statements.map((s) => inBackground(() => gate.run(s.run)));
    await turn();
    expect(log).toEqual(['a started']);
    gate.extraTurns++;
    // The next statement to settle or arrive lets the waiting one take the new turn.
    const d = held(log, 'd');
    const running = inBackground(() => gate.run(d.run));
    await turn();
    expect(log).toEqual(['a started', 'b started']);
    gate.extraTurns--;
    statements[0]!.end();
    await turn();
    expect(log).toEqual(['a started', 'b started', 'a ended']);
    statements[1]!.end();
    await turn();
    expect(log.at(-1)).toBe('c started');
    statements[2]!.end();
    d.end();
    await Promise.all([...runs, running]);

    const request = held(log, 'request');
    const requestRun = gate.run(request.run);
    expect(gate.requestsIdleMs).toBe(0);
    request.end();
    await requestRun;
    await turn();
    expect(gate.requestsIdleMs).toBeGreaterThanOrEqual(15);
  });

  it("leave requests' statements alone: they never wait for a turn", async () => {
    const gate = new StatementGate({ lingerMs: 0, maxWaitMs: 0, maxBackground: 1 });
    const log: string[] = [];
    const background = held(log, 'background');
    const running = inBackground(() => gate.run(background.run));
    await turn();
    await gate.run(async () => log.push('request'));
    expect(log).toEqual(['background started', 'request']);
    background.end();
    await running;
  });

  it('hold back while a request runs, then take turns', async () => {
    const gate = new StatementGate({ lingerMs: 0, maxWaitMs: 10_000, maxBackground: 1 });
    const log: string[] = [];
    const request = held(log, 'request');
    const requestRun = gate.run(request.run);
    const [a, b] = [held(log, 'a'), held(log, 'b')];
    const runs = [inBackground(() => gate.run(a.run)), inBackground(() => gate.run(b.run))];
    await turn();
    expect(log).toEqual(['request started']);
    request.end();
    await requestRun;
    await turn();
    expect(log).toEqual(['request started', 'request ended', 'a started']);
    a.end();
    b.end();
    await Promise.all(runs);
    expect(log.slice(3)).toEqual(['a ended', 'b started', 'b ended']);
  });

  it('go without a turn once they have waited maxSlotWaitMs (a lock the database cannot see)', async () => {
    const gate = new StatementGate({ lingerMs: 0, maxWaitMs: 0, maxBackground: 1, maxSlotWaitMs: 50 });
    const log: string[] = [];
    const first = held(log, 'first');
    const running = inBackground(() => gate.run(first.run));
    await inBackground(() => gate.run(async () => log.push('second')));
    expect(log).toEqual(['first started', 'second']);
    first.end();
    await running;
  });

  it('free the turn when a statement fails', async () => {
    const gate = new StatementGate({ lingerMs: 0, maxWaitMs: 0, maxBackground: 1 });
    await expect(
      inBackground(() =>
        gate.run(async () => {
          throw new Error('failed');
        }),
      ),
    ).rejects.toThrow('failed');
    expect(gate.backgroundInFlight).toBe(0);
    expect(await inBackground(() => gate.run(async () => 'next'))).toBe('next');
  });
});

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
  const connect = async (yieldMs: string, statements = '0') => {
    const database = await createDatabase(
      configFrom({ ...testDb.env, KAS_BACKGROUND_YIELD_MS: yieldMs, KAS_BACKGROUND_STATEMENTS: statements }),
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

  it('take turns: with KAS_BACKGROUND_STATEMENTS=1 one waits for the other to end', async () => {
    const order = async (statements: string) => {
      const database = await connect('0', statements);
      const order: string[] = [];
      const long = inBackground(() => sql`SELECT pg_sleep(0.4)`.execute(database.db)).then(() =>
        order.push('long'),
      );
      // Once the long one runs (a new pooled connection may take a while to open on a busy machine).
      await vi.waitFor(
        async () => {
          const { rows } = await sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`.execute(
            database.db,
          );
          expect(rows[0]?.n).toBe(1);
        },
        { timeout: 5000, interval: 20 },
      );
      const short = inBackground(() => sql`SELECT 1`.execute(database.db)).then(() => order.push('short'));
      await Promise.all([long, short]);
      return order;
    };
    expect(await order('1')).toEqual(['long', 'short']);
    expect(await order('2')).toEqual(['short', 'long']);
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
