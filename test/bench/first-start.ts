/**
 * `node test/bench/first-start.ts [--runs 3]`: where the first start of `kas serve` on a new data
 * directory spends its time. Each measurement runs in a fresh process (cold module cache):
 * - `kas serve` end to end: spawn until `/api/health` answers (what test/e2e/cli.test.ts bounds at 10 s),
 *   on a new directory and, for comparison, restarting on the same one;
 * - its phases, in a child that does what start-up does in order: Node's own start, loading the
 *   server's modules, opening PGlite on the new directory (its initdb), each migration, the rest of the
 *   runtime and the bootstrap admin key, listening.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve, stop } from '../harness/process.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '3' }, phases: { type: 'string' } },
});
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

if (values.phases) {
  // The child: the phases of a first start, timed.
  const marks: [string, number][] = [['node start (until this script runs)', performance.now()]];
  let last = performance.now();
  const mark = (name: string) => {
    const now = performance.now();
    marks.push([name, now - last]);
    last = now;
  };
  const { loadConfig, openPGlite, migrateToLatest } = await import('@kas/server');
  const { Kysely, PGliteDialect } = await import('kysely');
  const { startServer } = await import('../../packages/rest-bridge/src/server.ts');
  mark('load the server modules');
  const dataDir = values.phases;
  const pglite = await openPGlite(join(dataDir, 'pgdata'));
  mark('open PGlite on a new directory (initdb, extensions)');
  const db = new Kysely({ dialect: new PGliteDialect({ pglite }) });
  const applied = await migrateToLatest(db);
  mark(`migrations (${applied.length})`);
  await db.destroy();
  mark('close PGlite (Kysely closes it)');
  const config = loadConfig({ ...process.env, KAS_DATA_DIR: dataDir, PORT: '0', KAS_LOG_LEVEL: 'warn' });
  const running = await startServer(config, { worker: true });
  mark('startServer on the migrated directory (open PGlite again, runtime, bootstrap key, listen)');
  await running.close();
  process.stdout.write(`${JSON.stringify(marks)}\n`);
  process.exit(0);
}

const runs = Number(values.runs);
const phaseTotals = new Map<string, number[]>();
for (let run = 0; run < runs; run++) {
  const dir = mkdtempSync(join(tmpdir(), 'kas-first-'));
  const child = spawnSync(process.execPath, [import.meta.filename, '--phases', dir], { encoding: 'utf8' });
  rmSync(dir, { recursive: true, force: true });
  const line = child.stdout.trim().split('\n').at(-1) ?? '';
  if (child.status !== 0) throw new Error(`phases child failed: ${child.stderr.slice(-2000)}`);
  for (const [name, ms] of JSON.parse(line) as [string, number][])
    phaseTotals.set(name, [...(phaseTotals.get(name) ?? []), ms]);

  const fresh = mkdtempSync(join(tmpdir(), 'kas-first-'));
  const first = await serve({ KAS_DATA_DIR: fresh, KAS_LOG_LEVEL: 'warn' }, 60_000);
  await stop(first.child);
  const again = await serve({ KAS_DATA_DIR: fresh, KAS_LOG_LEVEL: 'warn' }, 60_000);
  await stop(again.child);
  rmSync(fresh, { recursive: true, force: true });
  process.stdout.write(
    `run ${run + 1}: kas serve first start ${first.startupMs} ms, restart ${again.startupMs} ms (load ${load()})\n`,
  );
}
process.stdout.write('phases of a first start (median of runs, ms):\n');
for (const [name, list] of phaseTotals) {
  const sorted = [...list].sort((a, b) => a - b);
  process.stdout.write(
    `  ${String(Math.round(sorted[Math.floor(sorted.length / 2)]!)).padStart(6)}  ${name}\n`,
  );
}
