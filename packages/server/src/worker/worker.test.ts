import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as maintenanceRepository from './maintenance.repository.ts';
import type { WorkerTask } from './task.ts';
import { analyzeChangedTables, purgeExpiredRateLimits } from './tasks.ts';
import { startWorker } from './worker.ts';

const t = useTestRuntime();

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

  it('analyses tables changed since their last ANALYZE on the embedded database (it has no autovacuum)', async (ctx) => {
    if (t.deps.dbKind !== 'pglite') ctx.skip();
    const user = await t.createKey('basic', 'many sessions');
    await sql`INSERT INTO chat_sessions (user_id, description) SELECT ${user.user_id}::uuid, 's' || g
      FROM generate_series(1, 500) g`.execute(t.deps.db);
    // The change counts reach pg_stat_user_tables when the session next reports its statistics.
    await sql`SELECT pg_stat_force_next_flush()`.execute(t.deps.db);
    await sql`SELECT 1`.execute(t.deps.db);
    const tuples = async () =>
      (
        await sql<{
          n: number;
        }>`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'chat_sessions'::regclass`.execute(
          t.deps.db,
        )
      ).rows[0]!.n;
    expect(await tuples()).toBeLessThan(500);
    const worker = startWorker(t.deps, [analyzeChangedTables]);
    // One table per run, the longest unanalysed first.
    for (let run = 0; run < 30 && (await tuples()) < 500; run++) await worker.runOnce();
    await worker.stop();
    expect(await tuples()).toBeGreaterThanOrEqual(500);
    // Bounded work: a small sample (10 histogram buckets, not Postgres's 100), and the expression
    // index on to_tsvector(description) is not evaluated row by row.
    const stats = await sql<{ name: string; bounds: number | null }>`
      SELECT tablename AS name, array_length(histogram_bounds, 1) AS bounds FROM pg_stats
      WHERE tablename IN ('chat_sessions', 'chat_sessions_description_fts_idx') AND attname IN ('description', 'to_tsvector')`.execute(
      t.deps.db,
    );
    expect(stats.rows).toEqual([{ name: 'chat_sessions', bounds: 11 }]);
  });

  it('analyses the longest unanalysed table first, so a busy one cannot starve the others', async (ctx) => {
    if (t.deps.dbKind !== 'pglite') ctx.skip();
    const db = t.deps.db;
    const user = await t.createKey('basic', 'busy table');
    await maintenanceRepository.analyzeTable(db, 'chat_sessions', 10);
    await sql`SELECT pg_stat_force_next_flush()`.execute(db);
    await sql`INSERT INTO chat_sessions (user_id, description) SELECT ${user.user_id}::uuid, 'b' || g
      FROM generate_series(1, 2000) g`.execute(db);
    await sql`INSERT INTO user_projects (user_id, name) SELECT ${user.user_id}::uuid, 'p' || g
      FROM generate_series(1, 100) g`.execute(db);
    await sql`SELECT pg_stat_force_next_flush()`.execute(db);
    await sql`SELECT 1`.execute(db);
    const due = await maintenanceRepository.tablesToAnalyze(db, { limit: 100, exclude: [] });
    const names = due.map((d) => d.table);
    expect(names).toContain('chat_sessions');
    expect(names.indexOf('user_projects')).toBeGreaterThanOrEqual(0);
    expect(names.indexOf('user_projects')).toBeLessThan(names.indexOf('chat_sessions'));
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
