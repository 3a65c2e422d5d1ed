/**
 * `npm run fuzz -- --cases 50000 [--seed N] [--concurrency 4] [--postgres] [--url http://host:port --key svck-…]`
 *
 * Runs the contract fuzzer. Without --url it starts kas in this process on a fresh embedded database,
 * or with --postgres on a real Postgres it starts itself (as the test harness does); with --url it
 * fuzzes that server using the admin key given. Exits 1 when any answer breaks the contract, listing each distinct problem.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startServer } from '@kas/rest-bridge';
import { configFrom } from '@kas/server';
import { startPostgres } from '../harness/postgres.ts';
import { runContractFuzz, summariseFindings } from './contract-fuzz.ts';
import { prepareFuzzTarget } from './target.ts';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '5000' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    url: { type: 'string' },
    key: { type: 'string' },
    postgres: { type: 'boolean', default: false },
  },
});
const cases = Number(values.cases);
const seed = values.seed ? Number(values.seed) : Date.now() % 2_147_483_647;
let url = values.url;
let adminKey = values.key;
let stop = async () => {};
if (!url) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-fuzz-'));
  adminKey = `svck-${'F'.repeat(20)}${Math.random().toString(36).slice(2, 12).padEnd(23, 'x')}`;
  const postgres = values.postgres ? await startPostgres() : undefined;
  const config = configFrom({
    ...process.env,
    ...(postgres
      ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') }
      : {}),
    PORT: '0',
    KAS_DATA_DIR: dataDir,
    KAS_LOG_LEVEL: 'silent',
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    KAS_AUTH_FAILURES_PER_MINUTE: '0',
    KAS_BOOTSTRAP_ADMIN_KEY: adminKey,
  });
  const running = await startServer(config);
  url = running.url;
  stop = async () => {
    await running.close();
    await postgres?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
if (!adminKey) throw new Error('--key (an admin API key) is required with --url');
process.stdout.write(`fuzzing ${url} with ${cases} cases, seed ${seed}\n`);
const target = await prepareFuzzTarget(url, adminKey);
const report = await runContractFuzz(target, {
  cases,
  seed,
  concurrency: Number(values.concurrency),
  onProgress: (done, r) => {
    if (done % 5000 === 0 || done === cases)
      process.stdout.write(`  ${done} cases, ${r.findings.length} findings, ${r.seconds.toFixed(0)} s\n`);
  },
});
await stop();
process.stdout.write(
  `${report.cases} cases in ${report.seconds.toFixed(1)} s (${(report.cases / report.seconds).toFixed(0)}/s), ` +
    `slowest answer ${Math.round(report.slowestMs)} ms (${report.slowestRequest})\nstatuses ${JSON.stringify(report.statuses)}\n` +
    `${Object.keys(report.successes).length} operations answered 2xx\n`,
);
if (report.findings.length) {
  process.stdout.write(
    `${report.findings.length} findings (seed ${seed}):\n${summariseFindings(report.findings, 100)}\n`,
  );
  process.exit(1);
}
process.stdout.write('no findings\n');
