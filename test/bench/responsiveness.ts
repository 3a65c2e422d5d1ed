/**
 * Responsiveness under heavy ingestion (issue 22, deliverable 2), on the embedded database and on a real
 * Postgres, kas in its own process:
 *   1. quiet: `GET /api/health` and an authenticated admin search (`POST /api/admin/search`), one probe
 *      of each at a time, over an index of BENCH_RESP_BASE_DOCS (30,000) ~300-word documents, once its
 *      maintenance has settled. (Over a few hundred documents, `BENCH_RESP_BASE_DOCS=300`, the load's
 *      40 MB multiply the index by sixty, and a search costs three times as much after it even on a quiet
 *      server: the ratio then measures the index's growth, not how the load slows a search.)
 *   2. loaded: the same probes while 8 clients each ingest 5 MB documents (`POST /api/svc-api/ingestion`)
 *      and one uploads a 20 MB PDF of many pages of text (`POST /api/chat/file`; a clean 413 from a
 *      page or text limit is accepted as well as a document).
 * Targets: health p99 ≤ 50 ms, search p99 ≤ 2× its quiet figure.
 * References measured in the same run: `quiet_after`, the same probes once the load is over (the index
 * has grown by the load's documents, so a search costs more than before it); on Postgres, `floor`: the
 * statements admin search issues (term statistics, ranking, rows) run directly on their own connection,
 * without HTTP, auth or kas's process, during the load and after it.
 * BENCH_SERVER_LOG=<file> keeps the server's log (slow statements: KAS_SLOW_QUERY_MS). kas's settings
 * pass through the environment: `KAS_BACKGROUND_YIELD_MS=0` measures Postgres without admission control
 * for background statements, `KAS_BACKGROUND_STATEMENTS=256` without their taking turns. The machine's load changes the figures a lot: on a shared machine compare
 * runs made back to back, and `loaded.search` with `loaded.floor` of the same run (the floor's
 * statements are not kas's requests, so only kas's own searches are let ahead of its background work).
 * Sizes: BENCH_RESP_DOC_MB (5), BENCH_RESP_DOCS_PER_CLIENT (1), BENCH_RESP_PDF_MB (20).
 * `npm run bench -w test -- responsiveness [embedded|postgres]`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, createDatabase } from '@kas/server';
import {
  type AccessScope,
  ADMIN_SEARCH_CHUNKS,
  ADMIN_SEARCH_DOCUMENTS,
  championsToScore,
  parseQuery,
  planQuery,
  rng,
  searchRepository,
  toTsquery,
} from '@kas/server/testing';
import { manyPagePdf } from '../harness/office-files.ts';
import { startPostgres } from '../harness/postgres.ts';
import { ADMIN_KEY, ENCRYPTION_KEY, spawnKas, text } from './documents.ts';

const CLIENTS = 8;
const DOC_MB = Number(process.env.BENCH_RESP_DOC_MB ?? 5);
const DOCS_PER_CLIENT = Number(process.env.BENCH_RESP_DOCS_PER_CLIENT ?? 1);
const PDF_MB = Number(process.env.BENCH_RESP_PDF_MB ?? 20);
const QUIET_PROBES = 200;
const BASE_DOCS = Number(process.env.BENCH_RESP_BASE_DOCS ?? 30_000);
/** Maintenance rounds run every second or so while there is work (lists wait for 10 s without writes). */
const MAINTENANCE_IDLE_MS = 15_000;
const HEALTH_EVERY_MS = 20;
const SEARCH_EVERY_MS = 50;
const QUERIES = ['project schedule', 'payment record', 'network security', 'quality review', 'storage limit'];

const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const auth = { authorization: `Bearer ${ADMIN_KEY}` };

function percentile(values: number[], p: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1));
}

/** One request on the keep-alive agent; its status and duration (ms). */
function probe(url: string, method: string, body?: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, agent, headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const health = (url: string) => probe(`${url}/api/health`, 'GET');
const search = (url: string, i: number) =>
  probe(
    `${url}/api/admin/search`,
    'POST',
    JSON.stringify({ query: QUERIES[i % QUERIES.length], filters: {} }),
  );

const ALL: AccessScope = { all: true };

type DatabaseHandle = Awaited<ReturnType<typeof createDatabase>>;

/** The statements admin search issues on Postgres, run directly: the floor of its latency. */
async function bareSearch(database: DatabaseHandle, i: number): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const { db } = database;
  const parsed = parseQuery(QUERIES[i % QUERIES.length]!);
  const stats = await searchRepository.queryTerms(db, parsed.positiveWords);
  const plan = planQuery(stats.chunks, stats.terms);
  const hits = await searchRepository.bm25Search(db, {
    plan,
    must: toTsquery(parsed, { conditionsOnly: true }),
    filters: { include_hidden: true },
    access: ALL,
    limit: ADMIN_SEARCH_CHUNKS,
    scoredChampions: championsToScore(ADMIN_SEARCH_CHUNKS, undefined, plan),
  });
  const seen = new Set<string>();
  const shown = hits.filter((h) => !seen.has(h.document_id) && seen.add(h.document_id));
  await searchRepository.loadChunks(db, shown.slice(0, ADMIN_SEARCH_DOCUMENTS), ALL);
  return { status: 200, ms: performance.now() - started };
}

/** Probes at a steady pace until `until` settles: each loop waits for its answer before the next. */
async function probeWhile(
  until: Promise<unknown>,
  fn: (i: number) => Promise<{ status: number; ms: number }>,
  every: number,
) {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const times: number[] = [];
  let failures = 0;
  for (let i = 0; !done; i++) {
    const { status, ms } = await fn(i);
    times.push(ms);
    if (status !== 200) failures++;
    if (ms < every) await new Promise((r) => setTimeout(r, every - ms));
  }
  return { times, failures };
}

function figures(times: number[]) {
  return {
    n: times.length,
    p50_ms: percentile(times, 50),
    p99_ms: percentile(times, 99),
    max_ms: Number(Math.max(...times).toFixed(1)),
  };
}

/** A document of about `mb` MB of word-like English text. */
function bigDocument(seed: number, mb: number): string {
  const random = rng(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < mb * 1_000_000) {
    const part = text(random, 1000);
    parts.push(part);
    length += part.length + 1;
  }
  return parts.join(' ');
}

async function ingestBig(url: string, id: string, sectionText: string) {
  const started = performance.now();
  const res = await fetch(`${url}/api/svc-api/ingestion`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      document: { id, semantic_identifier: `Big ${id}`, sections: [{ text: `${id}. ${sectionText}` }] },
    }),
  });
  const answer = await res.text();
  return { status: res.status, ms: performance.now() - started, answer: answer.slice(0, 200) };
}

async function uploadPdf(url: string, pdf: Buffer) {
  const form = new FormData();
  form.append('files', new Blob([new Uint8Array(pdf)], { type: 'application/pdf' }), 'big.pdf');
  const started = performance.now();
  const res = await fetch(`${url}/api/chat/file`, { method: 'POST', headers: auth, body: form });
  const answer = await res.text();
  return { status: res.status, ms: performance.now() - started, answer: answer.slice(0, 300) };
}

function pdfOf(mb: number): Buffer {
  const random = rng(7);
  const pages: string[][] = [];
  let bytes = 0;
  while (bytes < mb * 1_000_000) {
    const lines = Array.from({ length: 55 }, () => text(random, 14));
    bytes += lines.reduce((n, l) => n + l.length + 8, 60);
    pages.push(lines);
  }
  return manyPagePdf(pages);
}

/**
 * Waits until search maintenance has settled after the base index was written: no maintenance round
 * logged (kas's debug log) for MAINTENANCE_IDLE_MS, then rounds of 20 searches until three in a row
 * have a median within 15 % of each other (at most ten minutes in all). Returns the seconds.
 */
async function settle(url: string, log: string): Promise<number> {
  const started = performance.now();
  const lastRound = () => {
    const lines = readFileSync(log, 'utf8').split('\n');
    for (let i = lines.length - 1; i >= 0; i--)
      if (lines[i]!.includes('search index maintenance round')) return JSON.parse(lines[i]!).time as number;
    return 0;
  };
  while (performance.now() - started < 600_000) {
    await new Promise((r) => setTimeout(r, 2000));
    if (Date.now() - lastRound() >= MAINTENANCE_IDLE_MS) break;
  }
  const medians: number[] = [];
  while (performance.now() - started < 600_000) {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) times.push((await search(url, i)).ms);
    medians.push(percentile(times, 50));
    const last = medians.slice(-3);
    if (last.length === 3 && Math.max(...last) <= 1.15 * Math.min(...last)) break;
    await new Promise((r) => setTimeout(r, 2000));
  }
  return (performance.now() - started) / 1000;
}

async function run(database: 'embedded' | 'postgres', docText: string, pdf: Buffer) {
  const postgres = database === 'postgres' ? await startPostgres() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-resp-'));
  let direct: DatabaseHandle | undefined;
  // kas's log (its maintenance rounds tell when the index has settled), unless the caller keeps one.
  const kept = process.env.BENCH_SERVER_LOG;
  const logDir = mkdtempSync(join(tmpdir(), 'kas-bench-resp-log-'));
  const log = kept || join(logDir, 'server.log');
  process.env.BENCH_SERVER_LOG = log;
  const server = await spawnKas({
    KAS_LOG_LEVEL: 'debug',
    KAS_MAX_UPLOAD_MB: String(Math.ceil(PDF_MB * 1.5)),
    KAS_MAX_BODY_MB: String(Math.ceil(DOC_MB * 2 + 2)),
    ...(postgres
      ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY }
      : { KAS_DATA_DIR: dataDir }),
  });
  if (kept === undefined) delete process.env.BENCH_SERVER_LOG;
  try {
    // An index to search, of a realistic size: BASE_DOCS ~300-word documents (batches of 100, 4 at a
    // time), then time for maintenance to settle (lists built once writes are quiet), so that the quiet
    // figure is the search a deployment answers every day, not a search over a few hundred chunks.
    const random = rng(3);
    const base = Array.from({ length: BASE_DOCS }, (_, i) => ({
      id: `small-${i}`,
      semantic_identifier: `Small ${i}`,
      sections: [{ text: text(random, 300) }],
    }));
    const seeded = performance.now();
    for (let i = 0; i < base.length; i += 400)
      await Promise.all(
        [0, 100, 200, 300].map((o) => {
          const documents = base.slice(i + o, i + o + 100);
          return documents.length
            ? fetch(`${server.url}/api/svc-api/ingestion/batch`, {
                method: 'POST',
                headers: { ...auth, 'content-type': 'application/json' },
                body: JSON.stringify({ documents }),
              }).then((r) => r.text())
            : undefined;
        }),
      );
    const seedSeconds = (performance.now() - seeded) / 1000;
    const settleSeconds = await settle(server.url, log);
    if (postgres)
      direct = await createDatabase(
        configFrom({ DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY }),
        { poolSize: 1 },
      );
    const quietProbes = async () => {
      const times = { health: [] as number[], search: [] as number[], floor: [] as number[] };
      for (let i = 0; i < QUIET_PROBES; i++) {
        times.health.push((await health(server.url)).ms);
        times.search.push((await search(server.url, i)).ms);
        if (direct) times.floor.push((await bareSearch(direct, i)).ms);
      }
      return times;
    };
    const quietTimes = await quietProbes();

    const started = performance.now();
    let ingestedAt = Number.NaN;
    const ingestions = Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const results = [];
        for (let d = 0; d < DOCS_PER_CLIENT; d++)
          results.push(await ingestBig(server.url, `big-${c}-${d}`, docText));
        return results;
      }),
    ).finally(() => {
      ingestedAt = performance.now();
    });
    const upload = uploadPdf(server.url, pdf);
    const load = Promise.all([ingestions, upload]);
    // kas's search and the floor's statements take turns in one loop, so that neither waits on the other.
    const floorTimes: number[] = [];
    const searchAndFloor = async (i: number) => {
      const answer = await search(server.url, i);
      if (direct) floorTimes.push((await bareSearch(direct, i)).ms);
      return answer;
    };
    const [loadedHealth, loadedSearch, [ingested, uploaded]] = await Promise.all([
      probeWhile(load, () => health(server.url), HEALTH_EVERY_MS),
      probeWhile(load, searchAndFloor, SEARCH_EVERY_MS),
      load,
    ]);
    const afterTimes = await quietProbes();
    const flat = ingested.flat();
    const withFloor = (times: { health: number[]; search: number[]; floor: number[] }) => ({
      health: figures(times.health),
      search: figures(times.search),
      ...(times.floor.length ? { floor: figures(times.floor) } : {}),
    });
    const quiet = withFloor(quietTimes);
    const loaded = withFloor({
      health: loadedHealth.times,
      search: loadedSearch.times,
      floor: floorTimes,
    });
    return {
      database,
      base: {
        documents: BASE_DOCS,
        seed_seconds: Number(seedSeconds.toFixed(1)),
        settle_seconds: Math.round(settleSeconds),
      },
      load_seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
      documents: {
        count: flat.length,
        mb_each: Number((docText.length / 1e6).toFixed(1)),
        statuses: [...new Set(flat.map((r) => r.status))],
        slowest_ms: Math.round(Math.max(...flat.map((r) => r.ms))),
        // Ingestion's throughput under the probes: every document's text over the time until the last was answered.
        mb_per_s: Number(((flat.length * docText.length) / 1e6 / ((ingestedAt - started) / 1000)).toFixed(2)),
        ...(flat.some((r) => r.status !== 200)
          ? { example: flat.find((r) => r.status !== 200)!.answer }
          : {}),
      },
      pdf: {
        mb: Number((pdf.length / 1e6).toFixed(1)),
        status: uploaded.status,
        ms: Math.round(uploaded.ms),
        ...(uploaded.status !== 200 ? { answer: uploaded.answer } : {}),
      },
      quiet,
      loaded,
      quiet_after: withFloor(afterTimes),
      probe_failures: loadedHealth.failures + loadedSearch.failures,
      targets: {
        health_p99_le_50ms: loaded.health.p99_ms <= 50,
        search_p99_le_2x_quiet: loaded.search.p99_ms <= 2 * quiet.search.p99_ms,
      },
    };
  } finally {
    await direct?.close();
    await server.stop();
    await postgres?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(logDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const chosen = process.argv[2] as 'embedded' | 'postgres' | undefined;
  const docText = bigDocument(11, DOC_MB);
  const pdf = pdfOf(PDF_MB);
  for (const database of chosen ? [chosen] : (['embedded', 'postgres'] as const)) {
    console.log(JSON.stringify(await run(database, docText, pdf), null, 2));
  }
  agent.destroy();
}
