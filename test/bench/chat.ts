/**
 * Chat benchmark. kas runs in its own process (embedded database) with the OpenAI-compatible provider
 * pointed at a local fake model that streams at a fixed rate; the fake and the client run here, on one
 * clock. Measures:
 *   - stream overhead: the fake's first token → the client's first `message_delta` (target p50 ≤ 5 ms);
 *   - kas's own time before the model is called (p50 ≤ 30 ms): the fake first calls the search tool, as a
 *     real model does, so this is send → first model call (auth, history, prompt) plus tool call done →
 *     second model call (retrieval over BENCH_CHAT_CHUNKS, default 100k, chunks seeded directly; prompt);
 *   - 50 concurrent streams: all complete, none with an error.
 * `node test/bench/chat.ts postgres` runs kas on a real Postgres instead; with BENCH_KEEP_PG_DIR the
 * cluster is kept in that directory and reused (not seeded again when it holds enough chunks, whatever
 * their text: e.g. the documents benchmark's 1M); BENCH_CHAT_QUESTION asks another question (e.g. one of
 * the golden set's on the documents benchmark's real-text corpus), and BENCH_CHAT_GOLDEN=<golden set
 * file> asks its questions in turn (e.g. test/eval/postgresql-15.golden.jsonl on that corpus), so that
 * the figures are over a set of real questions rather than one. The measured turns share one chat
 * session (its history grows with each), or with BENCH_CHAT_NEW_SESSIONS=1 each has its own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, createRuntime, evaluationService } from '@kas/server';
import {
  apiKeyActor,
  championsToScore,
  parseQuery,
  planQuery,
  rng,
  searchRepository,
  searchService,
  toTsquery,
} from '@kas/server/testing';
import { sql } from 'kysely';
import { ndjson } from '../e2e/chat-helpers.ts';
import { startFakeOpenAi } from '../fakes/openai.ts';
import { freePort } from '../harness/net.ts';
import { startPostgres } from '../harness/postgres.ts';

const root = join(import.meta.dirname, '../..');
const SEQUENTIAL = Number(process.env.BENCH_CHAT_RUNS ?? 60);
/** Turns before measuring (a service runs warm: PGlite's WebAssembly is optimised as it runs). */
const WARMUP = Number(process.env.BENCH_CHAT_WARMUP ?? 5);
const CONCURRENT = 50;
const TOKENS = 20;
const TOKEN_INTERVAL_MS = 10;
const ADMIN_KEY = `svck-${'B'.repeat(43)}`;
const CHUNKS = Number(process.env.BENCH_CHAT_CHUNKS ?? 100_000);
const NEW_SESSIONS = process.env.BENCH_CHAT_NEW_SESSIONS === '1';
const QUESTION =
  process.env.BENCH_CHAT_QUESTION ?? 'What does the travel policy say about quarterly reports?';
/** The questions asked, in turn: a golden set's (BENCH_CHAT_GOLDEN), else QUESTION alone. */
const QUESTIONS = process.env.BENCH_CHAT_GOLDEN
  ? evaluationService
      .parseGoldenSet(readFileSync(process.env.BENCH_CHAT_GOLDEN, 'utf8'))
      .map((c) => c.question)
  : [QUESTION];
const questionAt = (i: number) => QUESTIONS[i % QUESTIONS.length]!;
const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');
/** Where kas keeps its data: the embedded database's directory, plus Postgres's address on Postgres. */
let databaseEnv: Record<string, string> = {};

/**
 * Seeds the data directory with `count` one-chunk public documents before kas starts: filler words, with
 * the question's terms at different frequencies ("policy" common, "travel" mid, "quarterly" rare).
 */
async function seedIndex(dataDir: string, count: number): Promise<number> {
  const started = performance.now();
  const runtime = await createRuntime(
    configFrom({ KAS_DATA_DIR: dataDir, KAS_LOG_LEVEL: 'warn', ...databaseEnv }),
    { skipBootstrap: true },
  );
  try {
    const random = rng(11);
    const filler = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}x`);
    const sentence = () => {
      const words = Array.from({ length: 12 }, () => filler[Math.floor(random() ** 2 * filler.length)]!);
      if (random() < 0.1) words[3] = 'policy';
      if (random() < 0.01) words[6] = 'travel';
      if (random() < 0.001) words[9] = 'quarterly reports';
      return `${words.join(' ')}.`;
    };
    const BATCH = 1000;
    for (let start = 0; start < count; start += BATCH) {
      const ids = Array.from({ length: Math.min(BATCH, count - start) }, (_, i) => `bench-${start + i}`);
      const titles = ids.map((id) => `Document ${id}`);
      const contents = ids.map(() => Array.from({ length: 12 }, sentence).join(' '));
      await runtime.deps.db.transaction().execute(async (trx) => {
        await sql`
          INSERT INTO documents (id, semantic_id, title, link, source, from_ingestion_api, doc_updated_at,
            content_hash, chunk_count, is_public, access_user_ids, access_group_ids, tags)
          SELECT id, title, title, NULL, 'file', true, now(), '', 1, true, '{}', '{}', '{}'
          FROM unnest(${ids}::text[], ${titles}::text[]) AS t(id, title)`.execute(trx);
        await sql`
          INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
          SELECT id, 0, title, content, left(content, 200), NULL, 200
          FROM unnest(${ids}::text[], ${titles}::text[], ${contents}::text[]) AS t(id, title, content)`.execute(
          trx,
        );
      });
    }
    // Statistics folded, weights settled and champion lists built, as the service does after writes.
    await runtime.deps.search.maintain?.();
    await sql`ANALYZE`.execute(runtime.deps.db);
  } finally {
    await runtime.close();
  }
  return Math.round((performance.now() - started) / 1000);
}

/** Chunks already in the database (a kept Postgres cluster). */
async function storedChunks(): Promise<number> {
  const runtime = await createRuntime(configFrom({ KAS_LOG_LEVEL: 'warn', ...databaseEnv }), {
    skipBootstrap: true,
  });
  try {
    return Number(
      (await sql<{ n: string }>`SELECT count(*) AS n FROM chunks`.execute(runtime.deps.db)).rows[0]!.n,
    );
  } finally {
    await runtime.close();
  }
}

/** CPU time (user + system) of a process so far, from /proc (Linux); NaN elsewhere. */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * The floor under kas's retrieval step: on the same data directory, in-process (no HTTP, no chat), the
 * chunk search chat runs for the question (term statistics, BM25 over the candidates, loading 25
 * chunks), and its BM25 statement alone (returning the 25 chunks' rows, as on the embedded database).
 */
async function retrievalFloor(dataDir: string) {
  const runtime = await createRuntime(
    configFrom({ KAS_DATA_DIR: dataDir, KAS_LOG_LEVEL: 'warn', ...databaseEnv }),
    { skipBootstrap: true },
  );
  try {
    const actor = apiKeyActor({ user_id: randomUUID(), role: 'admin', api_key_id: 0 });
    const ctx = runtime.deps;
    const search: number[] = [];
    const statement: number[] = [];
    const rounds = 5 + Math.max(40, QUESTIONS.length);
    for (let i = 0; i < rounds; i++) {
      const question = questionAt(i);
      const parsed = parseQuery(question);
      const t0 = performance.now();
      await searchService.searchChunks({ ctx, actor, query: question, limit: 25 });
      const t1 = performance.now();
      const stats = await searchRepository.queryTerms(ctx.db, parsed.positiveWords);
      const t2 = performance.now();
      const plan = planQuery(stats.chunks, stats.terms);
      await searchRepository.bm25Search(ctx.db, {
        plan,
        must: toTsquery(parsed, { conditionsOnly: true }),
        filters: {},
        access: { all: true },
        limit: 25,
        scoredChampions: championsToScore(25, undefined, plan),
        rows: {},
      });
      if (i >= 5) {
        search.push(t1 - t0);
        statement.push(performance.now() - t2);
      }
    }
    return {
      chunk_search_in_process_ms: { p50: percentile(search, 50) },
      bm25_statement_alone_ms: { p50: percentile(statement, 50) },
    };
  } finally {
    await runtime.close();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2));
}

async function main() {
  const fake = await startFakeOpenAi();
  // Like a real model: first call the search tool with the user's question, then answer from its results.
  fake.fallback = (body) => {
    const messages = body.messages as Array<{ role: string; content?: unknown }>;
    if (messages.some((m) => m.role === 'tool'))
      return { tokens: Array.from({ length: TOKENS }, (_, i) => `token${i} `), delayMs: TOKEN_INTERVAL_MS };
    const asked = messages.findLast((m) => m.role === 'user')?.content;
    return {
      toolCalls: [
        {
          id: 'call_search',
          name: 'internal_search',
          arguments: JSON.stringify({ queries: [typeof asked === 'string' ? asked : QUESTION] }),
        },
      ],
    };
  };
  // BENCH_CHAT_DATA_DIR keeps the seeded index between runs (seeded when the directory does not exist).
  const kept = process.env.BENCH_CHAT_DATA_DIR;
  const dataDir = kept ?? mkdtempSync(join(tmpdir(), 'kas-bench-chat-'));
  const postgres =
    process.argv[2] === 'postgres' ? await startPostgres({ keep: process.env.BENCH_KEEP_PG_DIR }) : undefined;
  if (postgres) databaseEnv = { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY };
  const stored = postgres ? await storedChunks() : 0;
  const seedSeconds =
    (kept && existsSync(kept) && !postgres) || stored >= CHUNKS ? 0 : await seedIndex(dataDir, CHUNKS);
  const floor = await retrievalFloor(dataDir);
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      join(root, 'packages/rest-bridge/src/cli.ts'),
      'serve',
      '--no-worker',
    ],
    {
      env: {
        ...process.env,
        PORT: String(port),
        KAS_DATA_DIR: dataDir,
        ...databaseEnv,
        KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
        KAS_LLM_PROVIDER: 'openai',
        KAS_LLM_BASE_URL: fake.baseURL,
        KAS_RATE_LIMIT_PER_MINUTE: '0',
        KAS_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${url}/api/health`)).ok) break;
      } catch {}
      if (i > 300) throw new Error('kas did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
    const createSession = async (): Promise<string> =>
      (
        (await (
          await fetch(`${url}/api/chat/create-chat-session`, { method: 'POST', headers, body: '{}' })
        ).json()) as { chat_session_id: string }
      ).chat_session_id;
    const chat_session_id = await createSession();

    const turn = async (sessionId: string | null, question = QUESTION) => {
      const requestIndex = fake.requestAt.length;
      const sentAt = performance.now();
      const res = await fetch(`${url}/api/chat/send-chat-message`, {
        method: 'POST',
        headers,
        body: JSON.stringify(
          sessionId
            ? { message: question, chat_session_id: sessionId, parent_message_id: null }
            : { message: question, chat_session_info: {} },
        ),
      });
      let firstDeltaAt = 0;
      let error = false;
      let stopped = false;
      let documents = 0;
      for await (const line of ndjson(res)) {
        if (line.obj?.type === 'search_tool_documents_delta') documents += line.obj.documents.length;
        if (line.obj?.type === 'message_delta' && !firstDeltaAt) firstDeltaAt = performance.now();
        if (line.error) error = true;
        if (line.obj?.type === 'stop') stopped = true;
      }
      return {
        sentAt,
        firstDeltaAt,
        error: error || !stopped || res.status !== 200,
        requestIndex,
        documents,
      };
    };

    for (let i = 0; i < WARMUP; i++) await turn(chat_session_id, questionAt(i));
    const cpuBefore = cpuMs(child.pid);
    const overhead: number[] = [];
    const before: number[] = [];
    const retrieved: number[] = [];
    const beforeFirst: number[] = [];
    const searchStep: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) {
      const firstTokens = fake.firstTokenAt.length;
      // BENCH_CHAT_NEW_SESSIONS=1: each question in a session of its own (created untimed), as
      // independent questions would be asked; by default all in one session, whose history grows.
      const sessionId = NEW_SESSIONS ? await createSession() : chat_session_id;
      const r = await turn(sessionId, questionAt(WARMUP + i));
      overhead.push(r.firstDeltaAt - fake.firstTokenAt[firstTokens]!);
      // kas's own time: send → first model call (auth, history, prompt) plus the model's tool call done →
      // the second model call (retrieval over the index, tool result, prompt).
      const toFirstCall = fake.requestAt[r.requestIndex]! - r.sentAt;
      const toolToSecondCall = fake.requestAt[r.requestIndex + 1]! - fake.endAt[r.requestIndex]!;
      before.push(toFirstCall + toolToSecondCall);
      beforeFirst.push(toFirstCall);
      searchStep.push(toolToSecondCall);
      retrieved.push(r.documents);
    }

    const cpuPerTurn = (cpuMs(child.pid) - cpuBefore) / SEQUENTIAL;
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: CONCURRENT }, () => turn(null)));
    const concurrentMs = performance.now() - started;

    const report = {
      database: postgres ? 'postgres' : 'embedded',
      index_chunks: postgres ? Math.max(stored, CHUNKS) : CHUNKS,
      seed_seconds: seedSeconds,
      sequential_turns: SEQUENTIAL,
      questions: QUESTIONS.length,
      warmup_turns: WARMUP,
      retrieval_floor: floor,
      first_token_to_client_delta_ms: {
        p50: percentile(overhead, 50),
        p95: percentile(overhead, 95),
        max: percentile(overhead, 100),
      },
      send_to_first_model_call_ms: { p50: percentile(beforeFirst, 50), p95: percentile(beforeFirst, 95) },
      tool_call_to_second_model_call_ms: { p50: percentile(searchStep, 50), p95: percentile(searchStep, 95) },
      // CPU time kas spent per sequential turn (whole turn: before the model, streaming, saving); unlike
      // the latencies it barely moves with the machine's load.
      kas_cpu_ms_per_turn: Number(cpuPerTurn.toFixed(2)),
      documents_retrieved_per_turn: { min: Math.min(...retrieved), max: Math.max(...retrieved) },
      before_model_call_ms: {
        p50: percentile(before, 50),
        p95: percentile(before, 95),
        max: percentile(before, 100),
      },
      concurrent_streams: {
        streams: CONCURRENT,
        errors: results.filter((r) => r.error).length,
        total_ms: Math.round(concurrentMs),
        ideal_ms: TOKENS * TOKEN_INTERVAL_MS,
      },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (report.concurrent_streams.errors) process.exitCode = 1;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    await fake.close();
    if (!kept) rmSync(dataDir, { recursive: true, force: true });
    await postgres?.stop();
  }
}

await main();
