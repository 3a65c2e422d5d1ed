/**
 * Connectors benchmark: a generated local website of BENCH_WEB_PAGES pages (default 20,000, ~300
 * words each, linked) indexed by the web connector through the scheduler and worker.
 *   1. pages/s end to end on the embedded database and on Postgres (targets ≥ 150 and ≥ 400), with the
 *      peak RSS of the worker process (target < 400 MB; with PGlite the database lives in it too);
 *   2. pause latency: from the pause request until the running attempt has handed itself back (≤ 5 s);
 *   3. two workers on one Postgres indexing a four-section site as four pairs: every page fetched and
 *      indexed exactly once.
 * Memory: this process restarts itself and applies settings as `kas serve` does (memory.ts); compare with
 * the old defaults by KAS_MEMORY_TUNING=false KAS_PGLITE_SHARED_BUFFERS_MB=128. BENCH_TRACE=1 prints
 * memory every 5 s, BENCH_PAUSE=0 skips the pause test.
 * The site runs in its own process; the worker (kas's scheduler pass, as `kas worker` runs it) in this one.
 * Measured (2026-11-26, `BENCH_PAUSE=0 node test/bench/connectors.ts embedded`, the shared 2-core machine
 * at a load average of ~14): 20,000 pages complete in 197 s (101 pages/s) in one attempt, with 20,000
 * site requests for 20,000 distinct pages (the floor: one request per page); worker peak RSS 374 MB.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapCodeStatistics } from 'node:v8';
import {
  type Actor,
  type AppDeps,
  apiKeysService,
  applyMemorySettings,
  configFrom,
  createRuntime,
  type Runtime,
  releaseStartupGarbage,
  restartTuned,
} from '@kas/server';
import { apiKeyActor, connectorsService, schedulerPass } from '@kas/server/testing';
import { sql } from 'kysely';
import { startPostgres } from '../harness/postgres.ts';

const PAGES = Number(process.env.BENCH_WEB_PAGES ?? 20_000);
/** Memory settings (KAS_PGLITE_*, KAS_HEAP_*, KAS_MAX_HEAP_MB, KAS_MEMORY_TUNING, KAS_WASM_OPTIMIZE) pass through from the environment. */
const MEMORY_ENV = Object.fromEntries(
  Object.entries(process.env).filter(([k]) =>
    /^KAS_(PGLITE_|HEAP_|MAX_HEAP_MB|MEMORY_TUNING|WASM_OPTIMIZE)/.test(k),
  ),
) as Record<string, string>;
// As `kas serve` and `kas worker` do first thing: this process is the worker.
restartTuned(configFrom(MEMORY_ENV));
applyMemorySettings(configFrom(MEMORY_ENV));
const ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');

async function startSite(pages: number, sections: number): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, 'connectors-site.ts'), String(pages), String(sections)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()).port));
    child.once('exit', () => reject(new Error('site exited')));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function hits(site: string) {
  return (await (await fetch(`${site}/__hits`)).json()) as { total: number; distinct: number; max: number };
}

async function open(env: Record<string, string>): Promise<{ runtime: Runtime; actor: Actor }> {
  const config = configFrom({
    KAS_LOG_LEVEL: 'error',
    KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
    KAS_CONNECTOR_CONCURRENCY: '2',
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    ...MEMORY_ENV,
    ...env,
  });
  const runtime = await createRuntime(config, { skipBootstrap: true });
  releaseStartupGarbage();
  const key = await apiKeysService.createApiKey({
    ctx: runtime.deps,
    input: { role: 'admin', name: 'bench' },
  });
  return { runtime, actor: apiKeyActor({ user_id: key.user_id, role: 'admin', api_key_id: key.api_key_id }) };
}

async function webPair(deps: AppDeps, actor: Actor, baseUrl: string, name: string) {
  const { id } = await connectorsService.createConnector({
    ctx: { ...deps, actor },
    input: {
      name,
      source: 'web',
      input_type: 'load_state',
      connector_specific_config: { base_url: baseUrl, web_connector_type: 'recursive' },
      access_type: 'public',
    },
  });
  const credential = await connectorsService.createCredential({
    ctx: { ...deps, actor },
    input: { source: 'web', credential_json: {}, admin_public: true, curator_public: false, groups: [] },
  });
  const pair = await connectorsService.createPair({
    ctx: { ...deps, actor },
    input: { connector_id: id, credential_id: credential.id, name, access_type: 'public', groups: [] },
  });
  return pair.data as number;
}

async function attemptStatuses(deps: AppDeps): Promise<string[]> {
  const rows = await sql<{ status: string }>`SELECT status FROM index_attempts ORDER BY id`.execute(deps.db);
  return rows.rows.map((r) => r.status);
}

/** Peaks of `process.memoryUsage()` (bytes) while draining. */
interface Peak {
  rss: number;
  heapTotal?: number;
  heapUsed?: number;
  external?: number;
  arrayBuffers?: number;
  wasm?: number;
  /** RSS over the second half of the crawl. */
  steady?: { median: number; min: number; max: number };
  /** BENCH_SAMPLE: where to write the samples. */
  sampleFile?: string;
}
const mb = (n: number | undefined) => ((n ?? 0) / 2 ** 20).toFixed(0);

/** The kernel's exact high-water mark of this process's RSS (`VmHWM`, Linux; 0 elsewhere). */
function rssHighWater(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Resets {@link rssHighWater} to the current RSS (Linux); false when the kernel refuses. */
function resetRssHighWater(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** `/proc/self/smaps_rollup` fields in bytes (Linux), for BENCH_SAMPLE. */
function smaps(): Record<string, number> {
  try {
    const text = readFileSync('/proc/self/smaps_rollup', 'utf8');
    const fields: Record<string, number> = {};
    for (const m of text.matchAll(/^(Rss|Anonymous|Private_Dirty|Shared_Clean|Private_Clean):\s+(\d+) kB/gm))
      fields[m[1] as string] = Number(m[2]) * 1024;
    return fields;
  } catch {
    return {};
  }
}

/**
 * BENCH_SAMPLE=<file>: every 200 ms one CSV line (seconds since the start, then MB) with RSS, V8's heap,
 * external and array buffers, PGlite's WebAssembly memory, V8's code space, and smaps' anonymous and
 * file-backed shares: where the RSS goes while the crawl runs.
 */
function sampleTo(file: string | undefined, wasm: () => number): () => void {
  if (!file) return () => {};
  const started = performance.now();
  writeFileSync(
    file,
    't,rss,heapUsed,heapTotal,external,arrayBuffers,wasm,code,bytecode,anonymous,privateDirty,fileBacked,load1\n',
  );
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    const code = getHeapCodeStatistics();
    const s = smaps();
    const row = [
      ((performance.now() - started) / 1000).toFixed(1),
      ...[
        m.rss,
        m.heapUsed,
        m.heapTotal,
        m.external,
        m.arrayBuffers,
        wasm(),
        code.code_and_metadata_size,
        code.bytecode_and_metadata_size,
        s.Anonymous,
        s.Private_Dirty,
        (s.Shared_Clean ?? 0) + (s.Private_Clean ?? 0),
      ].map(mb),
      loadavg()[0]?.toFixed(2),
    ];
    appendFileSync(file, `${row.join(',')}\n`);
  }, 200);
  return () => clearInterval(timer);
}

/** Runs scheduler passes until no attempt is open, sampling RSS. */
async function drain(
  deps: AppDeps,
  peak: Peak,
  signal = new AbortController().signal,
  wasm: () => number = () => 0,
) {
  let ticks = 0;
  const rssSamples: number[] = [];
  const stopSampling = sampleTo(peak.sampleFile, wasm);
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peak.wasm = Math.max(peak.wasm ?? 0, wasm());
    if (process.env.BENCH_TRACE && ++ticks % 25 === 0)
      console.log(
        `  rss ${mb(m.rss)} heap ${mb(m.heapUsed)}/${mb(m.heapTotal)} external ${mb(m.external)} ab ${mb(m.arrayBuffers)} wasm ${mb(wasm())} MB`,
      );
    peak.rss = Math.max(peak.rss, m.rss);
    rssSamples.push(m.rss);
    peak.heapTotal = Math.max(peak.heapTotal ?? 0, m.heapTotal);
    peak.heapUsed = Math.max(peak.heapUsed ?? 0, m.heapUsed);
    peak.external = Math.max(peak.external ?? 0, m.external);
    peak.arrayBuffers = Math.max(peak.arrayBuffers ?? 0, m.arrayBuffers);
  }, 200);
  const gcProbe = (globalThis as { gc?: () => void }).gc
    ? setInterval(() => {
        (globalThis as { gc?: () => void }).gc?.();
        const m = process.memoryUsage();
        console.log(
          `after gc: rss ${mb(m.rss)} heapUsed ${mb(m.heapUsed)} heapTotal ${mb(m.heapTotal)} external ${mb(m.external)} ab ${mb(m.arrayBuffers)}`,
        );
      }, 10_000)
    : undefined;
  try {
    for (;;) {
      await schedulerPass(deps, signal);
      const open = (await attemptStatuses(deps)).filter((s) => s === 'not_started' || s === 'in_progress');
      if (!open.length || signal.aborted) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    clearInterval(sampler);
    clearInterval(gcProbe);
    stopSampling();
    // Steady state: the median and the range of RSS over the crawl's second half.
    const late = rssSamples.slice(Math.floor(rssSamples.length / 2)).sort((a, b) => a - b);
    if (late.length)
      peak.steady = {
        median: late[Math.floor(late.length / 2)] as number,
        min: late[0] as number,
        max: late[late.length - 1] as number,
      };
  }
}

async function throughput(database: 'embedded' | 'postgres') {
  const site = await startSite(PAGES, 1);
  const postgres = database === 'postgres' ? await startPostgres() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-web-'));
  const { runtime, actor } = await open(
    postgres ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY } : { KAS_DATA_DIR: dataDir },
  );
  try {
    // Start-up (creating the embedded database, migrations) is a part of the worker's life too. V8 frees
    // what start-up left (initdb's WebAssembly memory) in the background shortly after the collection:
    // the crawl's figure starts once RSS has settled (at most 2 s).
    for (let last = 0, i = 0; i < 20; i++) {
      const rss = process.memoryUsage().rss;
      if (Math.abs(rss - last) < 4 * 2 ** 20) break;
      last = rss;
      await new Promise((r) => setTimeout(r, 100));
    }
    const startupPeak = rssHighWater();
    const reset = resetRssHighWater();
    const peak: Peak = { rss: process.memoryUsage().rss, sampleFile: process.env.BENCH_SAMPLE };
    const started = performance.now();
    const pairId = await webPair(runtime.deps, actor, `${site.url}/s0/`, 'bench site');
    await drain(runtime.deps, peak, undefined, runtime.database.wasmMemoryBytes);
    const seconds = (performance.now() - started) / 1000;
    const crawlPeak = reset ? rssHighWater() : 0;
    const docs = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM document_by_cc_pair WHERE cc_pair_id = ${pairId}`.execute(
      runtime.deps.db,
    );
    const indexed = docs.rows[0]?.n ?? 0;
    const fetched = await hits(site.url);
    console.log(
      `${database}: ${indexed} of ${PAGES} pages indexed in ${seconds.toFixed(1)} s = ${(indexed / seconds).toFixed(0)} pages/s ` +
        `(target ${database === 'postgres' ? 400 : 150}); peak RSS of the worker process ${mb(peak.rss)} MB sampled every 200 ms; ` +
        `exact (VmHWM): ${mb(crawlPeak)} MB during the crawl, ${mb(startupPeak)} MB during start-up (target < 400 MB) (peaks: V8 heap ${mb(peak.heapUsed)} used / ${mb(peak.heapTotal)} total, external ${mb(peak.external)}, array buffers ${mb(peak.arrayBuffers)}, PGlite wasm memory ${mb(peak.wasm)} MB); ` +
        `RSS over the second half: median ${mb(peak.steady?.median)} MB, ${mb(peak.steady?.min)}–${mb(peak.steady?.max)} MB; load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}; ` +
        `site requests ${fetched.total}, distinct pages ${fetched.distinct}, attempts ${(await attemptStatuses(runtime.deps)).join(',')}`,
    );
    if (database === 'embedded' && process.env.BENCH_PAUSE !== '0')
      await pauseLatency(runtime.deps, actor, site.url);
  } finally {
    await runtime.close();
    await postgres?.stop();
    site.child.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function pauseLatency(deps: AppDeps, actor: Actor, site: string) {
  await fetch(`${site}/__reset`);
  const pairId = await webPair(deps, actor, `${site}/s0/`, 'pause test');
  const peak: Peak = { rss: 0 };
  const running = drain(deps, peak);
  for (;;) {
    const row = await sql<{
      n: number;
    }>`SELECT coalesce(max(docs_done), 0)::int AS n FROM index_attempts WHERE cc_pair_id = ${pairId}`.execute(
      deps.db,
    );
    if ((row.rows[0]?.n ?? 0) >= Math.min(500, PAGES / 4)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const pausedAt = performance.now();
  await connectorsService.setPairStatus({ ctx: { ...deps, actor }, id: pairId, status: 'paused' });
  for (;;) {
    const open = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM index_attempts WHERE cc_pair_id = ${pairId} AND status = 'in_progress'`.execute(
      deps.db,
    );
    if ((open.rows[0]?.n ?? 0) === 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const latency = performance.now() - pausedAt;
  const before = await hits(site);
  await new Promise((r) => setTimeout(r, 1500));
  const after = await hits(site);
  console.log(
    `pause: running attempt handed back ${latency.toFixed(0)} ms after the pause request (target ≤ 5000 ms); ` +
      `site requests in the 1.5 s after: ${after.total - before.total}`,
  );
  await connectorsService.setPairStatus({ ctx: { ...deps, actor }, id: pairId, status: 'active' });
  await running;
  await drain(deps, peak);
}

async function twoWorkers() {
  const sections = 4;
  const site = await startSite(PAGES, sections);
  const postgres = await startPostgres();
  const env = { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY };
  const one = await open(env);
  const two = await open(env);
  try {
    for (let s = 0; s < sections; s++)
      await webPair(one.runtime.deps, one.actor, `${site.url}/s${s}/`, `section ${s}`);
    const started = performance.now();
    const peak: Peak = { rss: 0 };
    await Promise.all([drain(one.runtime.deps, peak), drain(two.runtime.deps, peak)]);
    const seconds = (performance.now() - started) / 1000;
    const fetched = await hits(site.url);
    const owned = await sql<{ n: number; d: number }>`
      SELECT count(*)::int AS n, count(DISTINCT document_id)::int AS d FROM document_by_cc_pair`.execute(
      one.runtime.deps.db,
    );
    const workers = await sql<{ worker_id: string }>`SELECT DISTINCT worker_id FROM index_attempts`.execute(
      one.runtime.deps.db,
    );
    const exactlyOnce =
      fetched.distinct === PAGES &&
      fetched.max === 1 &&
      owned.rows[0]?.n === PAGES &&
      owned.rows[0]?.d === PAGES;
    console.log(
      `two workers on one Postgres: ${PAGES} pages in ${seconds.toFixed(1)} s = ${(PAGES / seconds).toFixed(0)} pages/s; ` +
        `pages fetched ${fetched.distinct} (most requests for one page: ${fetched.max}), documents ${owned.rows[0]?.n}; ` +
        `attempts run by ${workers.rows.length} workers; every page exactly once: ${exactlyOnce ? 'yes' : 'NO'}`,
    );
    if (!exactlyOnce) process.exitCode = 1;
  } finally {
    await one.runtime.close();
    await two.runtime.close();
    await postgres.stop();
    site.child.kill();
  }
}

const only = process.argv[2];
if (!only || only === 'embedded') await throughput('embedded');
if (!only || only === 'postgres') await throughput('postgres');
if (!only || only === 'two-workers') await twoWorkers();
