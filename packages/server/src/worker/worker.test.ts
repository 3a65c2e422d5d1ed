import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';
import { purgeExpiredRateLimits } from './tasks.ts';
import { startWorker, type WorkerTask } from './worker.ts';

let t: TestRuntime;
beforeAll(async () => {
  t = await createTestRuntime();
});
afterAll(async () => {
  await t.close();
});

describe('worker', () => {
  it('purges expired rate-limit windows and keeps live ones', async () => {
    await sql`INSERT INTO rate_limits (key, points, expire) VALUES ('old', 3, ${Date.now() - 1000}), ('live', 1, ${Date.now() + 60_000})`.execute(
      t.deps.db,
    );
    const worker = startWorker(t.deps, [purgeExpiredRateLimits]);
    await worker.runOnce();
    await worker.stop();
    const { rows } = await sql<{ key: string }>`SELECT key FROM rate_limits ORDER BY key`.execute(t.deps.db);
    expect(rows.map((r) => r.key)).toEqual(['live']);
  });

  it('keeps running after a task fails, and stops cleanly', async () => {
    let runs = 0;
    const flaky: WorkerTask = {
      name: 'flaky',
      intervalMs: 10,
      run: async () => {
        runs++;
        if (runs === 1) throw new Error('first run fails');
      },
    };
    const worker = startWorker(t.deps, [flaky]);
    await new Promise((r) => setTimeout(r, 120));
    await worker.stop();
    const after = runs;
    expect(after).toBeGreaterThan(2);
    await new Promise((r) => setTimeout(r, 50));
    expect(runs).toBe(after);
  });
});
