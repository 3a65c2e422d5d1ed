/**
 * Documents benchmark.
 *   1. Ingestion throughput over HTTP: one request per ~300-word document, 8 concurrent clients, kas in
 *      its own process, on the embedded database and on real Postgres (targets ≥ 300 and ≥ 1,000 docs/s).
 *   2. Admin search latency: 1,000 queries (rare, mid-frequency and very common terms) over HTTP on an
 *      index of 100k chunks inserted directly with SQL (targets p50 ≤ 15 ms, p99 ≤ 60 ms), against the
 *      same ranking SQL issued directly (target: ours ≤ 1.5× bare SQL): the statements the service issues
 *      (term statistics, then BM25 returning the shown chunks' rows), and for comparison the ranking
 *      alone, without the rows. They are measured together, query by query, so that each sees the same
 *      moment of the machine's load.
 * Sizes: BENCH_INGEST_DOCS (default 3000), BENCH_SEARCH_CHUNKS (100000), BENCH_SEARCH_QUERIES (1000),
 * BENCH_AGREEMENT_QUERIES (300, compared with exhaustive BM25; BENCH_AGREEMENT_SECONDS bounds that sample
 * by time), BENCH_EXHAUSTIVE_QUERIES (150, timed exhaustively; each costs seconds at 1M chunks). After the load, the statistics maintenance runs to the
 * end (on Postgres in another process, as `kas worker` would, while this one searches over HTTP); its
 * time and the searches' meanwhile are reported. Progress goes to stderr as each stage ends.
 * BENCH_SEARCH_DATA_DIR keeps the embedded search index between runs (a smaller kept index is extended,
 * an interrupted seed resumes), and BENCH_SEARCH_SEED_ONLY=1 stops after seeding it; BENCH_KEEP_PG_DIR
 * keeps the Postgres cluster in that directory (seeded when it holds too few chunks). A kept index or
 * cluster reused has its champion lists dropped first, as a load leaves them, so that the maintenance
 * measured is the one after a load; with BENCH_KEEP_LISTS=1 they are kept, to measure searches again
 * without that maintenance. BENCH_SEARCH_WARMUP=N sends every query N times over HTTP, untimed, before
 * the timed pass (default 0): the figures of a server whose caches hold the queries' pages, where the
 * default pass measures the first queries after Postgres started with empty buffers.
 * BENCH_SEARCH_CORPUS=generated (the default: ~150-word chunks of words drawn from a Zipf-like
 * vocabulary) or postgresql: real text, the PostgreSQL 15 manual that the search evaluation uses
 * (`search-eval.ts`), chunked by kas's chunker as ingestion chunks it (3,781 chunks of up to 512
 * tokens), repeated under new document ids up to BENCH_SEARCH_CHUNKS. Its queries are the golden set's
 * questions among rare, mid-frequency and very common words of the manual, and since the copies tie,
 * a hit agrees with exhaustive BM25 when it scores as high as the exhaustive 10th best.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '@kas/rest-bridge';
import { configFrom, evaluationService } from '@kas/server';
import {
  type AccessScope,
  ADMIN_SEARCH_CHUNKS,
  ADMIN_SEARCH_DOCUMENTS,
  championsToScore,
  chunkDocument,
  inBackground,
  keepOneSetOfAverages,
  type PostgresSearchIndex,
  parseQuery,
  planQuery,
  rng,
  searchRepository,
  toTsquery,
} from '@kas/server/testing';
import { type Kysely, sql } from 'kysely';
import { startPostgres } from '../harness/postgres.ts';
import { CORPORA, ensureCorpus } from './search-eval.ts';

const root = join(import.meta.dirname, '../..');
const INGEST_DOCS = Number(process.env.BENCH_INGEST_DOCS ?? 3000);
const CLIENTS = 8;
const SEARCH_CHUNKS = Number(process.env.BENCH_SEARCH_CHUNKS ?? 100_000);
const SEARCH_QUERIES = Number(process.env.BENCH_SEARCH_QUERIES ?? 1000);
const SEARCH_WARMUP = Number(process.env.BENCH_SEARCH_WARMUP ?? 0);
/** Queries compared with exhaustive BM25 (top-10 agreement), and timed exhaustively for comparison. */
const AGREEMENT_QUERIES = Number(process.env.BENCH_AGREEMENT_QUERIES ?? 300);
const EXHAUSTIVE_QUERIES = Number(process.env.BENCH_EXHAUSTIVE_QUERIES ?? 150);
/** The agreement sample stops at the first query past this many seconds (0: no bound). */
const AGREEMENT_SECONDS = Number(process.env.BENCH_AGREEMENT_SECONDS ?? 0);
const CORPUS = process.env.BENCH_SEARCH_CORPUS ?? 'generated';
if (CORPUS !== 'generated' && CORPUS !== 'postgresql')
  throw new Error(`BENCH_SEARCH_CORPUS: generated or postgresql, not ${CORPUS}`);
export const ADMIN_KEY = `svck-${'D'.repeat(43)}`;
const ALL: AccessScope = { all: true };
export const ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');

// English roots with prefixes and suffixes: 20k word-like terms that tokenize like real text (made-up
// syllables would make the BPE tokenizer an order of magnitude slower than it is on real documents).
const ROOTS = `account action answer area balance bank base board body book build call capital care case cause
center chance change charge check claim class clear close code color control cost count court cover credit
cycle data deal debt design detail develop device direct draft drive effect energy engine entry event
exchange factor field figure file finance focus force form frame fund game gate grade graph ground group
growth guard guide handle head health help hold home hope house image impact index input issue item
judge key labor land language launch layer lead learn level light limit line link list load local lock
logic loss market master matter measure media member memory message method model money motion move
name network note number object offer office order output owner page panel paper part party pass path
pattern payment people period permit person phase place plan plant point policy pool port position post
power practice press price print process product profit program project proof property public pull
purpose quality query range rate reach record region report request research resource response result
review right risk role route rule sale scale schedule school score screen search season section security
sense series server service session share shift signal site size skill source space speed staff stage
standard state status step stock storage store stream street structure study style subject supply
support system table target task team term test text theme thread ticket time title tool topic total
track trade traffic train transfer trust type unit update user value version view volume wage water
weight window work world`.split(/\s+/);
const PREFIXES = ['', 're', 'un', 'pre', 'over', 'sub', 'inter', 'co', 'mis', 'out'];
const SUFFIXES = ['', 's', 'ing', 'ed', 'er', 'ly', 'ment', 'ness', 'able', 'ful'];
export const VOCABULARY = (() => {
  const words: string[] = [];
  for (const suffix of SUFFIXES)
    for (const prefix of PREFIXES) for (const root of ROOTS) words.push(prefix + root + suffix);
  // Shuffle deterministically so that frequency does not follow the alphabet.
  const random = rng(1);
  for (let i = words.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [words[i], words[j]] = [words[j]!, words[i]!];
  }
  return words;
})();
const ZIPF = (() => {
  const weights = VOCABULARY.map((_, i) => 1 / (i + 1) ** 1.07);
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  return weights.map((w) => (sum += w / total));
})();
function zipfWord(random: () => number): string {
  const r = random();
  let lo = 0;
  let hi = ZIPF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ZIPF[mid]! < r) lo = mid + 1;
    else hi = mid;
  }
  return VOCABULARY[lo]!;
}
export function text(random: () => number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(zipfWord(random) + (i % 12 === 11 ? '.' : ''));
  return out.join(' ');
}

function percentile(values: number[], p: number): number {
  // None of a kind in a small sample (JSON shows null).
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2));
}

const loadAverage = () => loadavg().map((n) => Number(n.toFixed(1)));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * `kas serve` in its own process on a free port. With BENCH_SERVER_LOG=<file>, its log (info and up,
 * slow statements included; BENCH_LOG_LEVEL=debug adds each search maintenance round) goes to that file;
 * otherwise only its warnings reach stderr.
 */
export async function spawnKas(
  env: Record<string, string>,
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const logFile = process.env.BENCH_SERVER_LOG;
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      // e.g. BENCH_NODE_FLAGS=--trace-gc (its lines go to BENCH_SERVER_LOG)
      ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
      join(root, 'packages/rest-bridge/src/cli.ts'),
      'serve',
      '--no-worker',
    ],
    {
      env: {
        ...process.env,
        PORT: String(port),
        KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
        KAS_RATE_LIMIT_PER_MINUTE: '0',
        KAS_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? (logFile ? 'info' : 'warn'),
        ...env,
      },
      stdio: ['ignore', logFile ? openSync(logFile, 'a') : 'ignore', 'inherit'],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/api/health`)).ok) break;
    } catch {}
    if (i > 600) throw new Error('kas did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    },
  };
}

async function ingest(url: string, count: number, label: string) {
  const random = rng(42);
  const bodies = Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      document: {
        id: `bench-${label}-${i}`,
        semantic_identifier: `Benchmark document ${i}`,
        sections: [{ text: text(random, 300), link: `https://bench/${i}` }],
        metadata: { batch: label },
      },
    }),
  );
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
  // Warm up the process (JIT, first transaction) before timing.
  for (let i = 0; i < 20; i++) {
    await fetch(`${url}/api/svc-api/ingestion`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        document: { id: `warmup-${i}`, semantic_identifier: 'w', sections: [{ text: 'warm up' }] },
      }),
    });
  }
  let next = 0;
  let failures = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t0 = performance.now();
        const res = await fetch(`${url}/api/svc-api/ingestion`, { method: 'POST', headers, body: bodies[i] });
        await res.text();
        latencies.push(performance.now() - t0);
        if (res.status !== 200) failures++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    database: label,
    documents: count,
    failures,
    docs_per_s: Math.round(count / seconds),
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
  };
}

async function benchIngestion(databases: ('embedded' | 'postgres')[] = ['embedded', 'postgres']) {
  const results = [];
  if (databases.includes('embedded')) {
    const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-docs-'));
    const embedded = await spawnKas({ KAS_DATA_DIR: dataDir });
    try {
      results.push(await ingest(embedded.url, INGEST_DOCS, 'embedded'));
    } finally {
      await embedded.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  if (!databases.includes('postgres')) return results;
  const postgres = await startPostgres();
  try {
    const server = await spawnKas({ DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY });
    try {
      results.push(await ingest(server.url, INGEST_DOCS, 'postgres'));
    } finally {
      await server.stop();
    }
  } finally {
    await postgres.stop();
  }
  return results;
}

/** A chunk of the search benchmarks' index, with what its document's row needs. */
export interface SeedChunk {
  document_id: string;
  chunk_id: number;
  title: string;
  content: string;
  blurb: string;
  link: string | null;
  token_count: number;
  /** Its document's chunks (a document's chunks may be written by two batches). */
  chunk_count: number;
  source: string;
}

/** Chunks `start`..`start + n` of an index, in order (each index position always the same chunk). */
export type ChunkSource = (start: number, n: number) => SeedChunk[];

/** Generated text: one ~150-word chunk per document (`chunk-doc-<n>`), drawn in order from `random`. */
export function generatedChunks(random: () => number): ChunkSource {
  return (start, n) => {
    const titles = Array.from({ length: n }, () => text(random, 4));
    const contents = Array.from({ length: n }, () => text(random, 150));
    return titles.map((title, i) => ({
      document_id: `chunk-doc-${start + i}`,
      chunk_id: 0,
      title,
      content: contents[i]!,
      blurb: contents[i]!.slice(0, 200),
      link: null,
      token_count: 200,
      chunk_count: 1,
      source: 'file',
    }));
  };
}

/**
 * Real text: the PostgreSQL 15 manual's pages (as the search evaluation loads them), chunked by kas's
 * own chunker as ingestion chunks them, then copied under new document ids (`pgdoc-<copy>-<page>`)
 * as often as the index's size needs.
 */
export function manualChunks(): { source: ChunkSource; chunks: SeedChunk[] } {
  const corpus = CORPORA.postgresql!;
  if (!ensureCorpus(corpus)) throw new Error(`BENCH_SEARCH_CORPUS=postgresql needs ${corpus.path}`);
  const chunks = corpus.load().flatMap((page) => {
    const link = corpus.link(page.id);
    const pieces = chunkDocument({ title: page.title, sections: [{ text: page.text, link }] });
    return pieces.map((c) => ({
      document_id: page.id,
      chunk_id: c.chunk_id,
      title: c.title,
      content: c.content,
      blurb: c.blurb,
      link: c.link,
      token_count: c.token_count,
      chunk_count: pieces.length,
      source: 'web',
    }));
  });
  const source: ChunkSource = (start, n) =>
    Array.from({ length: n }, (_, i) => {
      const at = start + i;
      const chunk = chunks[at % chunks.length]!;
      return { ...chunk, document_id: `pgdoc-${Math.floor(at / chunks.length)}-${chunk.document_id}` };
    });
  return { source, chunks };
}

/**
 * Chunks `from`..`to` of the search benchmarks' index, from `source`, written by bare multi-row
 * statements in transactions of 500 (the database's triggers weigh and count them).
 */
export async function seedChunks(
  db: Kysely<any>,
  from: number,
  to: number,
  source: ChunkSource,
  options: { progress?: (done: number) => void; fold?: boolean } = {},
) {
  const BATCH = 500;
  for (let start = from; start < to; start += BATCH) {
    const chunks = source(start, Math.min(BATCH, to - start));
    const documents = [...new Map(chunks.map((c) => [c.document_id, c])).values()];
    // As kas's maintenance does during sustained ingestion (a second after a young index's first
    // writes, then every 15 s at most): fold the term counts, then record the average lengths later
    // chunks are weighted with, or re-weight every chunk when they drifted.
    if (options.fold && start > from && ((start - from) % 20_000 === 0 || (from === 0 && start === BATCH))) {
      await searchRepository.foldTermDeltas(db);
      await keepOneSetOfAverages(db, 1000);
    }
    if (start > from && (start - from) % 50_000 === 0) options.progress?.(start - from);
    const column = <K extends keyof SeedChunk>(rows: SeedChunk[], key: K) => rows.map((c) => c[key]);
    await db.transaction().execute(async (trx) => {
      // A document whose chunks span two batches was written by the first.
      await sql`
        INSERT INTO documents (id, semantic_id, title, link, source, from_ingestion_api, doc_updated_at,
          content_hash, chunk_count, is_public, access_user_ids, access_group_ids, tags)
        SELECT id, title, title, link, source, true, now() - (random() * interval '900 days'), '', chunk_count,
          true, '{}', '{}', '{}'
        FROM unnest(${column(documents, 'document_id')}::text[], ${column(documents, 'title')}::text[],
          ${column(documents, 'link')}::text[], ${column(documents, 'source')}::text[],
          ${column(documents, 'chunk_count')}::int[]) AS t(id, title, link, source, chunk_count)
        ON CONFLICT (id) DO NOTHING`.execute(trx);
      await sql`
        INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
        SELECT * FROM unnest(${column(chunks, 'document_id')}::text[], ${column(chunks, 'chunk_id')}::int[],
          ${column(chunks, 'title')}::text[], ${column(chunks, 'content')}::text[],
          ${column(chunks, 'blurb')}::text[], ${column(chunks, 'link')}::text[],
          ${column(chunks, 'token_count')}::int[])`.execute(trx);
    });
  }
}

interface Query {
  kind: 'rare' | 'mid' | 'common';
  query: string;
  /** A golden-set question (real-text corpus): its kind is that of its most frequent word. */
  question?: boolean;
}

/** Frequency ranks of the rare, mid-frequency and very common words the queries draw from. */
const BANDS = { rare: [5000, Number.POSITIVE_INFINITY], mid: [200, 2000], common: [0, 20] } as const;

/**
 * `count` queries over `words` (most frequent first): a kind in turn, every fifth of two words (with
 * `together`, two words it accepts, drawn again up to 100 times).
 */
function mixedQueries(
  words: string[],
  count = SEARCH_QUERIES,
  together?: (a: string, b: string) => boolean,
): Query[] {
  const qrandom = rng(99);
  const pick = (lo: number, hi: number) => {
    const top = Math.min(hi, words.length);
    return words[lo + Math.floor(qrandom() * (top - lo))]!;
  };
  const kinds = ['rare', 'mid', 'common'] as const;
  return Array.from({ length: count }, (_, i) => {
    const kind = kinds[i % 3]!;
    const term = () => pick(BANDS[kind][0], BANDS[kind][1]);
    if (i % 5 !== 4) return { kind, query: term() };
    const first = term();
    let second = term();
    for (let tries = 0; together && !together(first, second) && tries < 100; tries++) second = term();
    return { kind, query: `${first} ${second}` };
  });
}

/**
 * The real-text corpus's queries: the golden set's questions (one in four of the first ones, so that
 * the agreement sample holds them all) among single and two-word queries drawn from the corpus's own
 * words by the share of chunks holding them. Words are counted as kas's index counts them: the
 * lexemes of the index's first copy of the manual (Postgres's `english` configuration: stemmed, stop
 * words dropped) ranked by the chunks holding them, each queried as its most frequent spelling. The
 * two words of a query are found together in some chunk.
 */
async function manualQueries(db: Kysely<any>, chunks: SeedChunk[]): Promise<Query[]> {
  const wordsOf = (text: string) => text.toLowerCase().match(/[a-z]{3,}/g) ?? [];
  const occurrences = new Map<string, number>();
  for (const c of chunks)
    for (const word of wordsOf(`${c.title} ${c.content}`))
      occurrences.set(word, (occurrences.get(word) ?? 0) + 1);
  const stems = (
    await sql<{ word: string; lexemes: string[] }>`
      SELECT w.word, tsvector_to_array(to_tsvector('english', w.word)) AS lexemes
      FROM unnest(${[...occurrences.keys()]}::text[]) AS w(word)`.execute(db)
  ).rows;
  // Words that are one lexeme (stop words are none).
  const lexemeOf = new Map(stems.filter((r) => r.lexemes.length === 1).map((r) => [r.word, r.lexemes[0]!]));
  const spelling = new Map<string, string>();
  for (const [word, lexeme] of lexemeOf) {
    const known = spelling.get(lexeme);
    if (!known || occurrences.get(word)! > occurrences.get(known)!) spelling.set(lexeme, word);
  }
  // The index's own lexemes and their chunks, over its first copy of the manual.
  const counted = (
    await sql<{ word: string; ndoc: number }>`
      SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM chunks WHERE document_id LIKE ''pgdoc-0-%''')
      ORDER BY ndoc DESC, word`.execute(db)
  ).rows.filter((r) => spelling.has(r.word));
  const rank = new Map(counted.map((r, i) => [r.word, i]));
  const words = counted.map((r) => spelling.get(r.word)!);
  // Which chunks of the copy hold each word, to pair words found together.
  const holding = new Map<string, Set<number>>();
  chunks.forEach((c, i) => {
    for (const word of wordsOf(`${c.title} ${c.content}`)) {
      const lexeme = lexemeOf.get(word);
      if (lexeme === undefined || spelling.get(lexeme) !== word) continue;
      const set = holding.get(word) ?? new Set<number>();
      set.add(i);
      holding.set(word, set);
    }
  });
  const together = (a: string, b: string) => {
    const [small, large] = [holding.get(a), holding.get(b)].sort((x, y) => (x?.size ?? 0) - (y?.size ?? 0));
    return a !== b && [...(small ?? [])].some((i) => large?.has(i));
  };
  const questions: Query[] = evaluationService
    .parseGoldenSet(readFileSync(CORPORA.postgresql!.golden, 'utf8'))
    .map((c) => {
      const top = Math.min(
        ...wordsOf(c.question).map((w) => rank.get(lexemeOf.get(w) ?? '') ?? Number.POSITIVE_INFINITY),
      );
      const kind = top < BANDS.common[1] ? 'common' : top < BANDS.mid[1] ? 'mid' : 'rare';
      return { kind, query: c.question, question: true };
    });
  const generated = mixedQueries(words, SEARCH_QUERIES - questions.length, together);
  return Array.from({ length: SEARCH_QUERIES }, (_, i) =>
    i % 4 === 3 && questions.length ? questions.shift()! : generated.shift()!,
  );
}

async function benchSearch(database: 'embedded' | 'postgres') {
  const postgres =
    database === 'postgres' ? await startPostgres({ keep: process.env.BENCH_KEEP_PG_DIR }) : undefined;
  // BENCH_SEARCH_DATA_DIR keeps the embedded index between runs (loaded when it holds too few chunks).
  const kept = database === 'embedded' ? process.env.BENCH_SEARCH_DATA_DIR : undefined;
  const dataDir = kept ?? mkdtempSync(join(tmpdir(), 'kas-bench-search-'));
  const config = configFrom({
    PORT: '0',
    KAS_DATA_DIR: dataDir,
    KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    KAS_LOG_LEVEL: 'warn',
    // The embedded database's buffer cache (its default is small; a 1M-chunk index is ~6 GB).
    ...(process.env.KAS_PGLITE_SHARED_BUFFERS_MB
      ? { KAS_PGLITE_SHARED_BUFFERS_MB: process.env.KAS_PGLITE_SHARED_BUFFERS_MB }
      : {}),
    ...(postgres ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY } : {}),
  });
  const running = await startServer(config, { worker: false });
  const db = running.runtime.deps.db;
  // Progress on stderr, so that a long run (BENCH_SEARCH_CHUNKS=1000000) reports each stage as it ends.
  // With the machine's load average (1, 5, 15 minutes): figures on a shared machine depend on it.
  const note = (what: object) =>
    console.error(JSON.stringify({ at: new Date().toISOString(), database, load: loadAverage(), ...what }));
  const indexMb = async () => {
    const sizes = (
      await sql<{ database: number; chunks: number; statistics: number }>`
        SELECT pg_database_size(current_database())::float8 AS database,
          pg_total_relation_size('chunks')::float8 AS chunks,
          (pg_total_relation_size('search_terms') + pg_total_relation_size('search_champions'))::float8 AS statistics`.execute(
        db,
      )
    ).rows[0]!;
    return {
      database: Math.round(sizes.database / 1e6),
      chunks_table: Math.round(sizes.chunks / 1e6),
      statistics_and_champions: Math.round(sizes.statistics / 1e6),
    };
  };
  try {
    const manual = CORPUS === 'postgresql' ? manualChunks() : undefined;
    const loadStarted = performance.now();
    const stored = Number(
      (await sql<{ n: string }>`SELECT count(*) AS n FROM chunks`.execute(db)).rows[0]!.n,
    );
    // A kept index is extended only with the text it holds.
    const first = (await sql<{ id: string }>`SELECT id FROM documents LIMIT 1`.execute(db)).rows[0]?.id;
    if (first && first.startsWith('pgdoc-') !== (CORPUS === 'postgresql'))
      throw new Error(`the kept index holds another corpus than BENCH_SEARCH_CORPUS=${CORPUS} (${first})`);
    if ((postgres || kept) && stored >= SEARCH_CHUNKS && !process.env.BENCH_KEEP_LISTS) {
      await sql`DELETE FROM search_champions`.execute(db);
      await sql`UPDATE search_terms SET champions_df = NULL, champion_floor = NULL WHERE champions_df IS NOT NULL`.execute(
        db,
      );
      await sql`VACUUM (ANALYZE) search_champions, search_terms`.execute(db);
    }
    // A kept index holding fewer chunks is extended (a seed stopped part way resumes where it stopped).
    await seedChunks(
      db,
      Math.min(stored, SEARCH_CHUNKS),
      SEARCH_CHUNKS,
      manual?.source ?? generatedChunks(rng(7)),
      {
        fold: true,
        progress: (done) =>
          note({ seeding: done, seconds: Math.round((performance.now() - loadStarted) / 1000) }),
      },
    );
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    note({
      seeded: Math.max(stored, SEARCH_CHUNKS),
      seconds: Math.round(loadSeconds),
      index_mb: await indexMb(),
    });
    // Seeding a large kept index once, apart from the measurements (which then start from it).
    if (process.env.BENCH_SEARCH_SEED_ONLY)
      return { database, chunks: SEARCH_CHUNKS, load_seconds: loadSeconds };
    const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
    // A lean keep-alive client (node:http): the figure is kas's, not the client's. Node's fetch adds
    // ~0.3–0.5 ms of its own per request (WHATWG streams), measured on this machine.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const httpSearch = (query: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${running.url}/api/admin/search`, { method: 'POST', headers, agent }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (part: Buffer) => parts.push(part));
          res.on('error', reject);
          res.on('end', () => {
            if (res.statusCode !== 200) return reject(new Error(`search failed: ${res.statusCode}`));
            const body = JSON.parse(Buffer.concat(parts).toString()) as { documents: unknown[] };
            resolve(body.documents.length);
          });
        });
        req.on('error', reject);
        req.end(JSON.stringify({ query, filters: {} }));
      });

    const queries = manual
      ? await manualQueries(db, manual.chunks)
      : // Rare (ranks 5k-20k), mid-frequency (200-2k) and very common (0-20) terms, some as two-word queries.
        mixedQueries(VOCABULARY);

    // Fold the statistics, re-weight with the real average lengths and build champion lists, as the
    // service does in the background after writes: on Postgres in another process (as `kas worker`
    // does), on the embedded database in this one as background work (requests go first at its one
    // connection), while searches go over HTTP: search must keep answering meanwhile.
    const maintainStarted = performance.now();
    let rounds = 1;
    /** Searches over HTTP, one every 50 ms, until `finished` settles. */
    const searchUntil = async (finished: Promise<unknown>) => {
      let done = false;
      void finished.then(
        () => (done = true),
        () => (done = true),
      );
      const times: number[] = [];
      let empty = 0;
      let failed = 0;
      for (let i = 0; !done; i++) {
        const t0 = performance.now();
        try {
          if ((await httpSearch(queries[i % queries.length]!.query)) === 0) empty++;
          times.push(performance.now() - t0);
        } catch {
          failed++;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return {
        queries: times.length + failed,
        empty,
        failed,
        p50: times.length ? percentile(times, 50) : null,
        p99: times.length ? percentile(times, 99) : null,
        max: times.length ? Number(Math.max(...times).toFixed(2)) : null,
      };
    };
    let duringMaintenance: Awaited<ReturnType<typeof searchUntil>>;
    if (postgres) {
      const child = spawn(
        process.execPath,
        [join(import.meta.dirname, 'maintenance.ts'), 'complete', postgres.url],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let out = '';
      child.stdout!.on('data', (part: Buffer) => {
        out += part.toString();
      });
      const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
      duringMaintenance = await searchUntil(exited);
      if ((await exited) !== 0) throw new Error('maintenance failed');
      rounds = (JSON.parse(out.trim().split('\n').at(-1)!) as { rounds: number }).rounds;
    } else {
      const index = running.runtime.deps.search as PostgresSearchIndex;
      const work = inBackground(async () => {
        await index.maintain();
        while ((await searchRepository.staleChampionTerms(db, { minDf: 1000, limit: 1 })).length) {
          await index.maintain();
          rounds++;
        }
      });
      duringMaintenance = await searchUntil(work);
      await work;
    }
    const maintainSeconds = (performance.now() - maintainStarted) / 1000;
    const maintenanceLoad = loadAverage();
    note({ maintenance_seconds: Math.round(maintainSeconds), rounds, during_maintenance: duringMaintenance });
    await sql`ANALYZE`.execute(db);
    const indexSizes = await indexMb();

    // The ranking statements our Postgres index issues (term statistics, then BM25 over the candidate
    // set), issued directly from here without HTTP, auth or loading the chunks' text.
    const plans = new Map<string, Awaited<ReturnType<typeof planOf>>>();
    const planOf = async (query: string) => {
      const parsed = parseQuery(query);
      const stats = await searchRepository.queryTerms(db, parsed.positiveWords);
      return {
        plan: planQuery(stats.chunks, stats.terms),
        must: toTsquery(parsed, { conditionsOnly: true }),
      };
    };
    // As admin search issues them: hidden documents included, its limit, scored champions, and the
    // rows of the chunks shown (each document's best), returned with the ranking where the index does
    // that (PGlite), else read by key after it (Postgres).
    // With the index's own limits (the embedded database scores more champion candidates).
    const { rowsWithRanking, limits } = running.runtime.deps.search as PostgresSearchIndex;
    const bareStatement = (rows: boolean) => async (query: string) => {
      const { plan, must } = await planOf(query);
      const hits = await searchRepository.bm25Search(db, {
        plan,
        must,
        filters: { include_hidden: true },
        access: ALL,
        limit: ADMIN_SEARCH_CHUNKS,
        scoredChampions: championsToScore(ADMIN_SEARCH_CHUNKS, limits, plan),
        ...(rows && rowsWithRanking ? { rows: { perDocument: ADMIN_SEARCH_DOCUMENTS } } : {}),
      });
      if (rows && !rowsWithRanking) {
        const seen = new Set<string>();
        const shown = hits.filter((h) => !seen.has(h.document_id) && seen.add(h.document_id));
        await searchRepository.loadChunks(db, shown.slice(0, ADMIN_SEARCH_DOCUMENTS), ALL);
      }
      return hits.length;
    };
    const bareSql = bareStatement(true);
    // The ranking alone: what the statement costs without reading the rows shown.
    const rankingOnlySql = bareStatement(false);
    // Exhaustive BM25 over every chunk containing a query term: what the candidate set avoids.
    const naiveSql = async (query: string) => {
      let known = plans.get(query);
      if (!known) {
        known = await planOf(query);
        plans.set(query, known);
      }
      const rows = await searchRepository.bm25SearchAll(db, {
        ...known,
        filters: {},
        access: ALL,
        limit: 100,
      });
      return rows.length;
    };
    // Top-10 agreement of the index with exhaustive BM25, per kind of query, and for the two-word ones
    // of each kind apart (a chunk holding both words at good weights may be on neither word's list).
    const agreement: Record<string, number[]> = { rare: [], mid: [], common: [] };
    // Real text only: the same within 0.1 % of the exhaustive 10th best score. The copies of a passage
    // do not quite tie: their weights keep the average lengths of the time each was written (within
    // 2 % of each other here), and the exhaustive top 10 holds the copies a little ahead.
    const nearAgreement: Record<string, number[]> = { rare: [], mid: [], common: [] };
    // Each exhaustive query costs seconds at 1M chunks (more on the embedded database): progress every
    // ten queries, and BENCH_AGREEMENT_SECONDS bounds the sample by time.
    const agreementStarted = performance.now();
    const agreementSeconds = () => Math.round((performance.now() - agreementStarted) / 1000);
    for (const [n, q] of queries.slice(0, AGREEMENT_QUERIES).entries()) {
      if (n && n % 10 === 0) note({ agreement_queries: n, seconds: agreementSeconds() });
      if (AGREEMENT_SECONDS && agreementSeconds() > AGREEMENT_SECONDS) break;
      const { plan, must } = await planOf(q.query);
      const fast = await searchRepository.bm25Search(db, {
        plan,
        must,
        filters: {},
        access: ALL,
        limit: 10,
        scoredChampions: championsToScore(10, limits, plan),
      });
      const exact = await searchRepository.bm25SearchAll(db, {
        plan,
        must,
        filters: {},
        access: ALL,
        limit: 10,
      });
      if (!exact.length) continue;
      const expected = new Set(exact.map((h) => `${h.document_id}/${h.chunk_id}`));
      // Repeated copies of the same text tie on score by the hundred, and which of them the top 10
      // holds is arbitrary: there a hit agrees when it scores as high as the exhaustive 10th best (the
      // index scores its candidates exactly, with the same statement's expression).
      const floor = exact.at(-1)!.score * (1 - 1e-9);
      const share =
        fast.filter((h) => (manual ? h.score >= floor : expected.has(`${h.document_id}/${h.chunk_id}`)))
          .length / exact.length;
      const keys = [
        q.kind,
        ...(q.query.includes(' ') ? [`${q.kind}_two_words`] : []),
        ...(q.question ? ['questions'] : []),
      ];
      const near = fast.filter((h) => h.score >= exact.at(-1)!.score * (1 - 1e-3)).length / exact.length;
      for (const key of keys) {
        agreement[key] ??= [];
        agreement[key].push(Math.min(1, share));
        nearAgreement[key] ??= [];
        nearAgreement[key].push(Math.min(1, near));
      }
    }
    const mean = (shares: Record<string, number[]>) =>
      Object.fromEntries(
        Object.entries(shares).map(([k, v]) => [
          k,
          Number((v.reduce((a, b) => a + b, 0) / (v.length || 1)).toFixed(3)),
        ]),
      );
    const meanAgreement = mean(agreement);
    const meanNearAgreement = manual ? mean(nearAgreement) : undefined;

    const agreementSample = Object.fromEntries(Object.entries(agreement).map(([k, v]) => [k, v.length]));
    const agreementDefinition = manual
      ? "a hit agrees when its score is at least the exhaustive 10th best's (relative tolerance 1e-9)"
      : 'a hit agrees when it is one of the exhaustive top 10';
    note({
      top10_agreement_with_exhaustive_bm25: meanAgreement,
      ...(meanNearAgreement ? { within_0_1_percent: meanNearAgreement } : {}),
      queries: agreementSample,
      definition: agreementDefinition,
    });
    const loads: Record<string, number[]> = { maintenance: maintenanceLoad, agreement: loadAverage() };

    type Run = (q: string) => Promise<number>;
    const summarise = (subset: Query[], times: number[]) => {
      const byKind: Record<string, number[]> = { all: [], rare: [], mid: [], common: [] };
      if (manual) byKind.questions = [];
      times.forEach((ms, i) => {
        byKind.all!.push(ms);
        byKind[subset[i]!.kind]!.push(ms);
        if (subset[i]!.question) byKind.questions!.push(ms);
      });
      return Object.fromEntries(
        Object.entries(byKind).map(([k, v]) => [k, { p50: percentile(v, 50), p99: percentile(v, 99) }]),
      );
    };
    /**
     * Each query through every `runs` in turn, so that the figures compared (HTTP and the bare
     * statements) are paired: the same query, the same moment, the same load on the machine. The order
     * rotates from one query to the next, so each run goes first equally often: the first to run a
     * query reads its pages into the database's buffer cache and the others find them there (≈ 1 ms
     * on Postgres at 100k chunks).
     */
    const measure = async (runs: Run[], subset = queries) => {
      for (const q of subset.slice(0, 30)) for (const run of runs) await run(q.query);
      const times = runs.map(() => [] as number[]);
      for (const [n, q] of subset.entries()) {
        const order = runs.map((_, i) => (i + n) % runs.length);
        for (const i of order) {
          const t0 = performance.now();
          await runs[i]!(q.query);
          times[i]!.push(performance.now() - t0);
        }
      }
      return times.map((t) => summarise(subset, t));
    };
    for (let pass = 0; pass < SEARCH_WARMUP; pass++) for (const q of queries) await httpSearch(q.query);
    const [ours, bare, rankingOnly] = await measure([httpSearch, bareSql, rankingOnlySql]);
    loads.latency = loadAverage();
    note({ ours_http: ours!.all, bare_sql: bare!.all });
    const [naive] = await measure([naiveSql], queries.slice(0, EXHAUSTIVE_QUERIES));
    return {
      database,
      corpus: manual
        ? `the PostgreSQL 15 manual, ${manual.chunks.length} chunks repeated under new ids`
        : CORPUS,
      // A kept index may hold more than asked for (it is never cut).
      chunks: Math.max(stored, SEARCH_CHUNKS),
      load_seconds: Math.round(loadSeconds),
      maintenance_seconds: Math.round(maintainSeconds),
      maintenance_rounds: rounds,
      index_mb: indexSizes,
      search_during_maintenance_http: duringMaintenance,
      top10_agreement_with_exhaustive_bm25: meanAgreement,
      ...(meanNearAgreement ? { top10_agreement_within_0_1_percent: meanNearAgreement } : {}),
      top10_agreement_queries: agreementSample,
      top10_agreement_definition: agreementDefinition,
      // The load average (1, 5, 15 minutes) as each stage ended.
      load_average: loads,
      ours_http: ours,
      bare_sql: bare,
      http_over_bare: {
        p50: Number((ours!.all!.p50 / bare!.all!.p50).toFixed(2)),
        p99: Number((ours!.all!.p99 / bare!.all!.p99).toFixed(2)),
      },
      bare_ranking_only: rankingOnly,
      http_over_ranking_only: {
        p50: Number((ours!.all!.p50 / rankingOnly!.all!.p50).toFixed(2)),
        p99: Number((ours!.all!.p99 / rankingOnly!.all!.p99).toFixed(2)),
      },
      exhaustive_bm25_sql: { queries: EXHAUSTIVE_QUERIES, ...naive },
    };
  } finally {
    await running.close();
    if (!kept) rmSync(dataDir, { recursive: true, force: true });
    await postgres?.stop();
  }
}

export async function benchDocuments() {
  const ingestion = await benchIngestion();
  const search = [await benchSearch('embedded'), await benchSearch('postgres')];
  return { ingestion, search };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const only = process.argv[2];
  if (only === 'search') {
    const kinds = process.argv[3]
      ? [process.argv[3] as 'embedded' | 'postgres']
      : (['embedded', 'postgres'] as const);
    for (const kind of kinds) console.log(JSON.stringify(await benchSearch(kind), null, 2));
  } else if (only === 'ingest') {
    const kinds = process.argv[3] ? [process.argv[3] as 'embedded' | 'postgres'] : undefined;
    console.log(JSON.stringify(await benchIngestion(kinds), null, 2));
  } else {
    console.log(JSON.stringify(await benchDocuments(), null, 2));
  }
}
