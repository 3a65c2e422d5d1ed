/**
 * `node test/crash/run.ts [--docs 10000] [--rounds 1] [--postgres]`: the full-size crash round. 8 clients
 * ingest until `--docs` documents are acknowledged, `kas serve` is SIGKILLed with requests in flight and
 * restarted on the same data; prints what survived (every acknowledged document must), a sample of
 * searches, the half-written checks and the restart times. Exits 1 on any loss.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../harness/postgres.ts';
import { stopAllProcesses } from '../harness/process.ts';
import { runCrashRounds } from './crash-rounds.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '1' },
    postgres: { type: 'boolean', default: false },
  },
});
const dataDir = mkdtempSync(join(tmpdir(), 'kas-crash-'));
const env: Record<string, string> = { KAS_DATA_DIR: dataDir };
const postgres = values.postgres ? await startPostgres() : undefined;
if (postgres) {
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE kas_crash');
  await admin.end();
  env.DATABASE_URL = postgres.urlFor('kas_crash');
  env.KAS_ENCRYPTION_KEY = Buffer.alloc(32, 5).toString('base64');
}
try {
  const report = await runCrashRounds({
    env,
    rounds: Number(values.rounds),
    docsPerRound: Number(values.docs),
    log: (line) => process.stdout.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const lost = report.missing.length + report.unsearchable.length;
  const half = Object.values(report.halfWritten).reduce((a, b) => a + b, 0);
  process.stdout.write(lost + half ? `LOSS: ${lost} documents, ${half} half-written rows\n` : 'no loss\n');
  process.exitCode = lost + half ? 1 : 0;
} finally {
  stopAllProcesses();
  await postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
