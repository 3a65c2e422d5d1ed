/**
 * Several processes on one machine: two API processes (`kas serve --no-worker`), one `kas worker`, a
 * Postgres primary and one streaming replica (DATABASE_READ_URLS). After seeding BENCH_TOPOLOGY_DOCS
 * (default 5000) ~300-word documents through the batch route, every API process is driven for
 * BENCH_TOPOLOGY_SECONDS (20) by 4 admin-search clients (mixed rare, mid-frequency and very common
 * words) and 1 batch-ingestion client (50 documents a request), all at once. Reports, per process,
 * requests/s, latency and CPU seconds, the share of transactions the replica served, and the index
 * size per chunk (for the capacity note in docs/deployment-topology.md).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rng } from '@kas/server/testing';
import pg from 'pg';
import { startPostgres } from '../harness/postgres.ts';
import { ADMIN_KEY, ENCRYPTION_KEY, spawnKas, text, VOCABULARY } from './documents.ts';

const root = join(import.meta.dirname, '../..');
const DOCS = Number(process.env.BENCH_TOPOLOGY_DOCS ?? 5000);
const SECONDS = Number(process.env.BENCH_TOPOLOGY_SECONDS ?? 20);
const SEARCHERS = 4;
const INGEST_BATCH = 50;

/** CPU seconds a process (and, for a postmaster, its backends) has used so far. */
function cpuSeconds(pid: number, withChildren = false): number {
  const one = (p: number) => {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      return 0;
    }
  };
  if (!withChildren) return one(pid);
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter(Boolean);
  return one(pid) + children.reduce((sum, child) => sum + one(child), 0);
}

/** The postmaster listening on `port` (its command line names the port). */
function postmasterOf(port: number): number {
  const lines = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n');
  const line = lines.find((l) => l.includes(` -p ${port} `) && l.includes('postgres'));
  if (!line) throw new Error(`no postmaster on port ${port}`);
  return Number(line.trim().split(/\s+/)[0]);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number((sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0).toFixed(1));
}

const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };

function documents(label: string, count: number, seed: number) {
  const random = rng(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: `topology-${label}-${i}`,
    semantic_identifier: `Topology document ${label} ${i}`,
    sections: [{ text: text(random, 300), link: `https://bench/${label}/${i}` }],
  }));
}

async function postBatch(url: string, batch: unknown[]): Promise<boolean> {
  const res = await fetch(`${url}/api/svc-api/ingestion/batch`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ documents: batch }),
  });
  await res.text();
  return res.status === 200;
}

function spawnWorker(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [join(root, 'packages/rest-bridge/src/cli.ts'), 'worker'], {
    env: { ...process.env, KAS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function transactions(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ n: string }>(
    `SELECT sum(xact_commit + xact_rollback)::text AS n FROM pg_stat_database`,
  );
  await client.end();
  return Number(rows[0]!.n);
}

async function main() {
  const primary = await startPostgres();
  const replica = await primary.startReplica();
  const env = {
    DATABASE_URL: primary.url,
    DATABASE_READ_URLS: replica.url,
    KAS_ENCRYPTION_KEY: ENCRYPTION_KEY,
  };
  const apis = [await spawnKas(env), await spawnKas(env)];
  const worker = spawnWorker({ ...env, KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY });
  try {
    // Seed through the first process.
    const seed = documents('seed', DOCS, 1);
    const seedStarted = performance.now();
    for (let i = 0; i < seed.length; i += 100) await postBatch(apis[0]!.url, seed.slice(i, i + 100));
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    // Let maintenance fold the statistics and the replica catch up before measuring.
    await new Promise((r) => setTimeout(r, 5000));

    const qrandom = rng(99);
    const pick = (lo: number, hi: number) => VOCABULARY[lo + Math.floor(qrandom() * (hi - lo))]!;
    const query = (n: number) => {
      const kind = n % 3;
      const term = () =>
        kind === 0 ? pick(5000, VOCABULARY.length) : kind === 1 ? pick(200, 2000) : pick(0, 20);
      return n % 5 === 4 ? `${term()} ${term()}` : term();
    };
    const primaryPid = postmasterOf(primary.port);
    const replicaPid = postmasterOf(replica.port);
    const before = {
      apis: apis.map((a) => cpuSeconds(a.pid)),
      worker: cpuSeconds(worker.pid!),
      primary: cpuSeconds(primaryPid, true),
      replica: cpuSeconds(replicaPid, true),
      primaryTx: await transactions(primary.url),
      replicaTx: await transactions(replica.url),
    };
    const until = Date.now() + SECONDS * 1000;
    const perProcess = await Promise.all(
      apis.map(async (api, index) => {
        const searches: number[] = [];
        const ingests: number[] = [];
        let failures = 0;
        let n = index * 100_000;
        let batchNo = 0;
        await Promise.all([
          ...Array.from({ length: SEARCHERS }, async () => {
            while (Date.now() < until) {
              const t0 = performance.now();
              const res = await fetch(`${api.url}/api/admin/search`, {
                method: 'POST',
                headers,
                body: JSON.stringify({ query: query(n++), filters: {} }),
              });
              await res.text();
              if (res.status !== 200) failures++;
              searches.push(performance.now() - t0);
            }
          }),
          (async () => {
            while (Date.now() < until) {
              const batch = documents(
                `load-${index}-${batchNo}`,
                INGEST_BATCH,
                1000 + index * 10_000 + batchNo,
              );
              batchNo++;
              const t0 = performance.now();
              if (!(await postBatch(api.url, batch))) failures++;
              ingests.push(performance.now() - t0);
            }
          })(),
        ]);
        return {
          process: `api-${index + 1}`,
          searches_per_s: Math.round(searches.length / SECONDS),
          search_p50_ms: percentile(searches, 50),
          search_p99_ms: percentile(searches, 99),
          ingested_docs_per_s: Math.round((ingests.length * INGEST_BATCH) / SECONDS),
          batch_p50_ms: percentile(ingests, 50),
          failures,
        };
      }),
    );
    const after = {
      apis: apis.map((a) => cpuSeconds(a.pid)),
      worker: cpuSeconds(worker.pid!),
      primary: cpuSeconds(primaryPid, true),
      replica: cpuSeconds(replicaPid, true),
      primaryTx: await transactions(primary.url),
      replicaTx: await transactions(replica.url),
    };
    const cpu = (a: number, b: number) => Number(((b - a) / SECONDS).toFixed(2));
    const client = new pg.Client({ connectionString: primary.url });
    await client.connect();
    const size = (
      await client.query<{ chunks: number; database_bytes: string; chunks_bytes: string }>(
        `SELECT (SELECT count(*) FROM chunks)::int AS chunks, pg_database_size(current_database())::text AS database_bytes,
           pg_total_relation_size('chunks')::text AS chunks_bytes`,
      )
    ).rows[0]!;
    await client.end();
    const searchesPerS = perProcess.reduce((s, p) => s + p.searches_per_s, 0);
    const totalCores =
      cpu(before.apis[0]!, after.apis[0]!) +
      cpu(before.apis[1]!, after.apis[1]!) +
      cpu(before.primary, after.primary) +
      cpu(before.replica, after.replica);
    console.log(
      JSON.stringify(
        {
          seed: { documents: DOCS, seconds: Number(seedSeconds.toFixed(1)) },
          seconds: SECONDS,
          per_process: perProcess.map((p, i) => ({
            ...p,
            cpu_cores: cpu(before.apis[i]!, after.apis[i]!),
          })),
          worker: { cpu_cores: cpu(before.worker, after.worker) },
          primary: {
            cpu_cores: cpu(before.primary, after.primary),
            transactions_per_s: Math.round((after.primaryTx - before.primaryTx) / SECONDS),
          },
          replica: {
            cpu_cores: cpu(before.replica, after.replica),
            transactions_per_s: Math.round((after.replicaTx - before.replicaTx) / SECONDS),
          },
          searches_per_s: searchesPerS,
          searches_per_s_per_busy_core: Number((searchesPerS / Math.max(totalCores, 0.01)).toFixed(1)),
          index: {
            chunks: size.chunks,
            database_mb: Math.round(Number(size.database_bytes) / 1e6),
            chunks_table_mb: Math.round(Number(size.chunks_bytes) / 1e6),
            bytes_per_chunk_database: Math.round(Number(size.database_bytes) / size.chunks),
          },
        },
        null,
        2,
      ),
    );
  } finally {
    for (const api of apis) await api.stop();
    worker.kill('SIGTERM');
    await new Promise((r) => (worker.exitCode !== null ? r(null) : worker.once('exit', r)));
    await replica.stop();
    await primary.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
