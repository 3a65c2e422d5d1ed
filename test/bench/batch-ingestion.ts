/**
 * Batch ingestion benchmark: `POST /api/svc-api/ingestion/batch` with batches of BENCH_BATCH_SIZE
 * (default 100) ~300-word documents from 8 concurrent clients, kas in its own process, on the embedded
 * database and on real Postgres (targets ≥ 500 and ≥ 1,500 docs/s), search statistics maintained by the
 * same triggers as always. The floor, in the same run: the same rows (documents, owners, the chunks
 * kas's chunker makes) written by bare multi-row statements in transactions of one batch each, from 8
 * connections on Postgres (one on the embedded database, which runs one statement at a time anyway),
 * into the same kind of freshly migrated database — each chunk's tsvector and BM25 weights computed in
 * the statement as kas's own statements do, and the triggers that keep the search statistics included,
 * since they are part of the same rows' cost.
 * Beside the rates, the CPU each side spent per document (robust to a shared machine's load, where the
 * rates are not): kas's process (on the embedded database its database thread included), the Postgres
 * server's processes, and the floor's own process (the chunker, and the embedded database's thread).
 * Sizes: BENCH_BATCH_DOCS (default 6000), BENCH_BATCH_SIZE (100). `batch-ingestion.ts embedded|postgres` runs one.
 * BENCH_BATCH_CORPUS: `generator` (default) writes the search benchmarks' made-up words, ~820 tokens per
 * 300 words (each word is prefix + root + suffix), so two chunks per document; `manual` writes 300-word
 * passages of the PostgreSQL manual's pages (the search evaluation's real text, ~390 tokens, about one
 * chunk each), titled by their page; there are ~3,900, taken again under new ids when more are needed.
 * kas runs with the environment's KAS_INGEST_WRITERS and KAS_BULK_INGEST_WRITERS (defaults when unset:
 * nothing else runs, so on Postgres the bulk mode's writers write), and on the embedded database its
 * KAS_PGLITE_TEXT_THREAD (`auto`: on here); `writers` reports them.
 * BENCH_PG_STATEMENTS=N (Postgres) also reports the N statements of kas's timed run that took the most
 * database time (pg_stat_statements, which ships with the server binaries): where kas's database work
 * exceeds the floor's.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, createDatabase, migrateToLatest } from '@kas/server';
import { chunkDocument, rng } from '@kas/server/testing';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { startPostgres } from '../harness/postgres.ts';
import { ADMIN_KEY, ENCRYPTION_KEY, spawnKas, text } from './documents.ts';
import { CORPORA, ensureCorpus } from './search-eval.ts';

const DOCS = Number(process.env.BENCH_BATCH_DOCS ?? 6000);
const BATCH = Number(process.env.BENCH_BATCH_SIZE ?? 100);
const CLIENTS = 8;
/** The least time kas is warmed up for (BENCH_BATCH_WARMUP_MS), in rounds of one batch per client. */
const WARMUP_MS = Number(process.env.BENCH_BATCH_WARMUP_MS ?? 3000);
const CORPUS = process.env.BENCH_BATCH_CORPUS ?? 'generator';
if (CORPUS !== 'generator' && CORPUS !== 'manual')
  throw new Error(`BENCH_BATCH_CORPUS is generator or manual, not ${CORPUS}`);

interface Doc {
  id: string;
  semantic_identifier: string;
  sections: { text: string; link: string }[];
  metadata: Record<string, string>;
}

/** The manual's pages cut into passages of 300 words (a page's last one kept if it has 100 or more). */
const passages = (() => {
  let cached: { title: string; text: string; link: string }[] | undefined;
  return () => {
    if (cached) return cached;
    const corpus = CORPORA.postgresql!;
    if (!ensureCorpus(corpus)) throw new Error(`BENCH_BATCH_CORPUS=manual needs ${corpus.path}`);
    cached = corpus.load().flatMap((page) => {
      const words = page.text.split(/\s+/).filter(Boolean);
      const out: { title: string; text: string; link: string }[] = [];
      for (let at = 0; at < words.length; at += 300)
        if (words.length - at >= 100 || at === 0)
          out.push({
            title: page.title,
            text: words.slice(at, at + 300).join(' '),
            link: corpus.link(page.id),
          });
      return out;
    });
    return cached;
  };
})();

/**
 * `count` documents. The same texts for every label but the warm-ups' (kas and the floor write the same
 * rows); on the manual, the warm-ups start after the timed run's `BENCH_BATCH_DOCS` passages, cycling
 * (with the default 6,000 the timed run takes some passages twice and the warm-ups overlap it).
 */
function documents(label: string, count: number): Doc[] {
  if (CORPUS === 'manual') {
    const all = passages();
    const start = label.endsWith('warmup') ? DOCS : 0;
    return Array.from({ length: count }, (_, i) => {
      const passage = all[(start + i) % all.length]!;
      return {
        id: `bench-${label}-${i}`,
        semantic_identifier: passage.title,
        sections: [{ text: passage.text, link: passage.link }],
        metadata: { batch: label },
      };
    });
  }
  const random = rng(42);
  return Array.from({ length: count }, (_, i) => ({
    id: `bench-${label}-${i}`,
    semantic_identifier: `Benchmark document ${i}`,
    sections: [{ text: text(random, 300), link: `https://bench/${i}` }],
    metadata: { batch: label },
  }));
}

/** CPU time (user + system) of a process so far, and of its children it has waited for, from /proc (Linux). */
function cpuMs(pid: number | string, children = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks =
      Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0);
    return (ticks * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time of a Postgres server so far: the postmaster's own and its ended backends' (it waits for each),
 * plus its running processes'.
 */
async function postgresCpuMs(url: string): Promise<number> {
  // The postmaster is the parent of this connection's backend (read while it lives).
  const postmaster = await onceAt(url, async (client) => {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]!;
  });
  let total = cpuMs(postmaster, true);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === postmaster)
        total += cpuMs(entry);
    } catch {}
  }
  return total;
}

/** CPU milliseconds per document, to one decimal. */
const perDocument = (ms: number, documents: number) => Math.round((ms / documents) * 100) / 100;

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** The writers settings kas ran with (the bench passes the environment on), defaults spelled out. */
function writers(database: 'embedded' | 'postgres') {
  const cores = availableParallelism();
  const ingest = Number(process.env.KAS_INGEST_WRITERS || 0) || Math.max(1, Math.floor(cores / 2));
  if (database === 'embedded')
    return {
      ingest_writers: 1,
      note: 'one statement at a time',
      // The chunks' vectors from a thread of their own (db/text-thread.ts); the floor computes them in its statements.
      text_thread: process.env.KAS_PGLITE_TEXT_THREAD ?? 'auto',
    };
  const bulk = Number(process.env.KAS_BULK_INGEST_WRITERS || 0) || Math.max(2, cores);
  return {
    cores,
    ingest_writers: ingest,
    // Bulk mode: while a full group waits and no search or chat runs (as here), `bulk_writers` write.
    bulk_writers: Math.max(ingest, bulk),
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1));
}

/** Runs `batches` from CLIENTS concurrent workers; returns docs/s and batch latencies. */
async function drive(batches: Doc[][], send: (batch: Doc[]) => Promise<number>) {
  let next = 0;
  let failures = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < batches.length; i = next++) {
        const t0 = performance.now();
        failures += await send(batches[i]!);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const count = batches.reduce((n, b) => n + b.length, 0);
  return {
    documents: count,
    failures,
    docs_per_s: Math.round(count / seconds),
    batch_p50_ms: percentile(latencies, 50),
    batch_p99_ms: percentile(latencies, 99),
  };
}

/** The corpus, and its documents' chunks and tokens on average (kas's chunker, the first 500). */
function corpus() {
  const sample = documents('sample', Math.min(DOCS, 500)).map((d) =>
    chunkDocument({ title: d.semantic_identifier, sections: d.sections }),
  );
  const chunks = sample.reduce((n, c) => n + c.length, 0);
  const tokens = sample.reduce((n, c) => n + c.reduce((m, k) => m + k.token_count, 0), 0);
  return {
    corpus: CORPUS,
    chunks_per_document: Math.round((chunks / sample.length) * 100) / 100,
    tokens_per_document: Math.round(tokens / sample.length),
  };
}

function inBatches(all: Doc[]): Doc[][] {
  const out: Doc[][] = [];
  for (let i = 0; i < all.length; i += BATCH) out.push(all.slice(i, i + BATCH));
  return out;
}

/** CPU meters read before and after a timed run: each gives milliseconds so far. */
type Meters = Record<string, () => number | Promise<number>>;

/** `drive`, with the CPU each meter counted per document meanwhile and the machine's load before and after. */
async function measured(batches: Doc[][], send: (batch: Doc[]) => Promise<number>, meters: Meters) {
  const read = async () =>
    Object.fromEntries(
      await Promise.all(Object.entries(meters).map(async ([k, m]) => [k, await m()] as const)),
    );
  const loadBefore = load();
  const before = await read();
  const result = await drive(batches, send);
  const after = await read();
  return {
    ...result,
    cpu_ms_per_doc: Object.fromEntries(
      Object.keys(meters).map((k) => [k, perDocument(after[k]! - before[k]!, result.documents)]),
    ),
    load: `${loadBefore} → ${load()}`,
  };
}

/** `afterWarmup` runs between the warm-up and the timed run. */
async function overHttp(url: string, label: string, meters: Meters, afterWarmup?: () => Promise<void>) {
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
  const post = async (batch: Doc[]) => {
    const res = await fetch(`${url}/api/svc-api/ingestion/batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ documents: batch }),
    });
    if (res.status !== 200) return batch.length;
    const { results } = (await res.json()) as { results: { error: unknown }[] };
    return results.filter((r) => r.error).length;
  };
  // Warm up the process (JIT, first transactions) before timing, and for long enough that kas runs the
  // steady state of a bulk load: on Postgres its extra writers start once no request's statement (the
  // health check, the first requests' key lookups) has run for 2 s (ingest.ts, BULK_QUIET_MS). A timed
  // run of 6,000 documents lasts ~4 s: after the short warm-up its first second ran at one writer.
  const warmup = performance.now();
  for (let round = 0; round === 0 || performance.now() - warmup < WARMUP_MS; round++)
    await drive(inBatches(documents(`${label}-${round}-warmup`, BATCH * CLIENTS)), post);
  await afterWarmup?.();
  return measured(inBatches(documents(label, DOCS)), post, meters);
}

/** The same rows as bare multi-row statements: one transaction per batch. */
function bareWriter(execute: (statement: ReturnType<typeof sql>) => Promise<void>, pairId: number) {
  return async (batch: Doc[]) => {
    const chunks = batch.map((d) =>
      chunkDocument({ title: d.semantic_identifier, sections: d.sections }).map((c) => ({ ...c, d: d.id })),
    );
    const flat = chunks.flat();
    const ids = batch.map((d) => d.id);
    await execute(sql`WITH doc AS (
        INSERT INTO documents (id, semantic_id, title, link, source, metadata, tags, primary_owners,
          secondary_owners, doc_updated_at, content_hash, chunk_count, is_public, access_user_ids, access_group_ids)
        SELECT id, t, t, l, 'file', m::jsonb, '{}', '[]', '[]', now(), id, n, true, '{}', '{}'
        FROM unnest(${ids}::text[], ${batch.map((d) => d.semantic_identifier)}::text[],
          ${batch.map((d) => d.sections[0]!.link)}::text[], ${batch.map((d) => JSON.stringify(d.metadata))}::text[],
          ${chunks.map((c) => c.length)}::int[]) AS u(id, t, l, m, n)
        RETURNING id),
      owner AS (
        INSERT INTO document_by_cc_pair (document_id, cc_pair_id)
        SELECT id, ${pairId}::int FROM unnest(${ids}::text[]) AS u(id) RETURNING cc_pair_id)
      INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, section_links, token_count,
        search_vector, bm25_terms, bm25_weights, bm25_length, bm25_title_length, bm25_boost)
      SELECT d, c, t, x, b, l, s::jsonb, n, v.vector, w.terms, w.weights, coalesce(w.len, 0), coalesce(w.tlen, 0), 1
      FROM unnest(
        ${flat.map((c) => c.d)}::text[], ${flat.map((c) => c.chunk_id)}::int[], ${flat.map((c) => c.title)}::text[],
        ${flat.map((c) => c.content)}::text[], ${flat.map((c) => c.blurb)}::text[], ${flat.map((c) => c.link)}::text[],
        ${flat.map((c) => JSON.stringify(c.section_links))}::text[], ${flat.map((c) => c.token_count)}::int[]
      ) AS u(d, c, t, x, b, l, s, n),
      LATERAL (SELECT setweight(to_tsvector('english', u.t), 'A') || setweight(to_tsvector('english', u.x), 'D') AS vector
        OFFSET 0) v,
      LATERAL kas_bm25_weights(v.vector) w`);
    return 0;
  };
}

async function systemPair(db: Kysely<any>): Promise<number> {
  const row = await sql<{ id: number }>`SELECT p.id FROM cc_pairs p JOIN connectors c ON c.id = p.connector_id
    WHERE p.is_system AND c.source = 'ingestion_api' ORDER BY p.id LIMIT 1`.execute(db);
  return row.rows[0]?.id ?? 0;
}

async function embedded() {
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-batch-'));
  const floorDir = mkdtempSync(join(tmpdir(), 'kas-bench-batch-floor-'));
  try {
    const kas = await spawnKas({ KAS_DATA_DIR: dataDir });
    let ours: Awaited<ReturnType<typeof overHttp>>;
    try {
      ours = await overHttp(kas.url, 'embedded', {
        kas: () => cpuMs(kas.pid),
        client: () => cpuMs(process.pid),
      });
    } finally {
      await kas.stop();
    }
    const handle = await createDatabase(configFrom({ KAS_DATA_DIR: floorDir }));
    try {
      await migrateToLatest(handle.db);
      const write = bareWriter(
        (statement) => handle.db.transaction().execute(async (trx) => void (await statement.execute(trx))),
        await systemPair(handle.db),
      );
      await drive(inBatches(documents('floor-warmup', BATCH * CLIENTS)), write);
      const floor = await measured(inBatches(documents('floor', DOCS)), write, {
        bench: () => cpuMs(process.pid),
      });
      return {
        database: 'embedded',
        ...corpus(),
        batch_size: BATCH,
        clients: CLIENTS,
        writers: writers('embedded'),
        kas_http: ours,
        floor_bare_sql: floor,
      };
    } finally {
      await handle.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(floorDir, { recursive: true, force: true });
  }
}

const STATEMENTS = Number(process.env.BENCH_PG_STATEMENTS ?? 0);

/** `query` on a connection of its own to the database of `url`. */
async function onceAt<T>(url: string, query: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await query(client);
  } finally {
    await client.end();
  }
}

/** Counts statements from now on, in the database of `url`. */
const resetStatements = (url: string) =>
  onceAt(url, async (client) => {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
  });

/** The statements that took the most database time since `resetStatements`, in the database of `url`. */
const topStatements = (url: string) =>
  onceAt(url, async (client) => {
    const { rows } = await client.query<{ ms: number; calls: number; query: string }>(
      `SELECT round(total_exec_time)::int AS ms, calls::int AS calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       ORDER BY total_exec_time DESC LIMIT $1`,
      [STATEMENTS],
    );
    return rows;
  });

async function postgres() {
  const server = await startPostgres(
    STATEMENTS ? { extra: ['-c', 'shared_preload_libraries=pg_stat_statements'] } : {},
  );
  try {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE kas_batch');
    await admin.query('CREATE DATABASE kas_floor');
    await admin.end();
    const kas = await spawnKas({
      DATABASE_URL: server.urlFor('kas_batch'),
      KAS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    });
    let ours: Awaited<ReturnType<typeof overHttp>>;
    let statements: Awaited<ReturnType<typeof topStatements>> = [];
    try {
      ours = await overHttp(
        kas.url,
        'postgres',
        {
          kas: () => cpuMs(kas.pid),
          postgres: () => postgresCpuMs(server.url),
          client: () => cpuMs(process.pid),
        },
        STATEMENTS ? () => resetStatements(server.urlFor('kas_batch')) : undefined,
      );
      if (STATEMENTS) statements = await topStatements(server.urlFor('kas_batch'));
    } finally {
      await kas.stop();
    }
    const handle = await createDatabase(
      configFrom({ DATABASE_URL: server.urlFor('kas_floor'), KAS_ENCRYPTION_KEY: ENCRYPTION_KEY }),
      { poolSize: CLIENTS },
    );
    try {
      await migrateToLatest(handle.db);
      const write = bareWriter(
        (statement) => handle.db.transaction().execute(async (trx) => void (await statement.execute(trx))),
        await systemPair(handle.db),
      );
      await drive(inBatches(documents('floor-warmup', BATCH * CLIENTS)), write);
      const floor = await measured(inBatches(documents('floor', DOCS)), write, {
        bench: () => cpuMs(process.pid),
        postgres: () => postgresCpuMs(server.url),
      });
      return {
        database: 'postgres',
        ...corpus(),
        batch_size: BATCH,
        clients: CLIENTS,
        writers: writers('postgres'),
        kas_http: ours,
        floor_bare_sql: floor,
        ...(STATEMENTS ? { kas_statements: statements } : {}),
      };
    } finally {
      await handle.close();
    }
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const only = process.argv[2];
  const results = [];
  if (!only || only === 'embedded') results.push(await embedded());
  if (!only || only === 'postgres') results.push(await postgres());
  console.log(JSON.stringify(results, null, 2));
}
