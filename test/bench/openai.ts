/**
 * OpenAI-compatible surface and resumable streams. kas runs in its own process (embedded database) with
 * the OpenAI-compatible provider pointed at a local fake model streaming at a fixed rate; the fake and
 * the client run here, on one clock. Measures:
 *   - first content token to client: the fake's first token → the first `message_delta` line (NDJSON) and
 *     → the first content chunk (SSE, /v1), p50 of each and of their difference (target ≤ 5 ms);
 *   - 50 concurrent /v1 streams: all complete, none with an error;
 *   - resume: request → first replayed line of `resume-stream?cursor=0` and of
 *     `/v1/chat/completions/{id}?stream=true` (target p50 ≤ 20 ms), of ended answers;
 * then, on two kas processes sharing a Postgres (so either can resume what the other runs):
 *   - cut and resume a live answer: a stream cut after K lines and resumed at the next line, in the process
 *     running the turn (it follows the turn's own lines) and in the other one (it reads the table every
 *     KAS_STREAM_BUFFER_POLL_MS), on both surfaces: first replayed line p50, and whether the cut stream
 *     and the resumed one make the whole answer;
 *   - a soak (BENCH_OPENAI_SOAK_S seconds, default 600; 0 skips it): 4 clients at a time start answers on a
 *     random process and surface, drop the connection after a random number of lines and resume on a random
 *     process; every BENCH_OPENAI_SAMPLE_S (default 30) s the RSS of both processes and the kept stream
 *     lines (rows, bytes, the table's size on disk), kept BENCH_OPENAI_SOAK_BUFFER_AGE_S (default 60) s.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { answerOf, ndjson } from '../e2e/chat-helpers.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { freePort } from '../harness/net.ts';
import { startPostgres } from '../harness/postgres.ts';
import { ENCRYPTION_KEY, ADMIN_KEY as SPAWNED_ADMIN_KEY, spawnKas } from './documents.ts';

const root = join(import.meta.dirname, '../..');

/** Starts a streamed `/v1` chat completion of the benchmark's one question. */
function streamCompletion(base: string, headers: Record<string, string>, signal?: AbortSignal) {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'kas', stream: true, messages: [{ role: 'user', content: 'Tell me' }] }),
    signal,
  });
}
const RUNS = Number(process.env.BENCH_OPENAI_RUNS ?? 40);
const WARMUP = 5;
const CONCURRENT = 50;
const TOKENS = 20;
const TOKEN_INTERVAL_MS = 10;
const ADMIN_KEY = `svck-${'O'.repeat(43)}`;
const SOAK_S = Number(process.env.BENCH_OPENAI_SOAK_S ?? 600);
const SAMPLE_S = Number(process.env.BENCH_OPENAI_SAMPLE_S ?? 30);
const SOAK_BUFFER_AGE_S = Number(process.env.BENCH_OPENAI_SOAK_BUFFER_AGE_S ?? 60);
const SOAK_CLIENTS = 4;
const EXPECTED_ANSWER = Array.from({ length: TOKENS }, (_, i) => `token${i} `).join('');

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2));
}

/** SSE events as they arrive: each `data` parsed (`[DONE]` as is). */
async function* sse(res: Response): AsyncGenerator<any> {
  for await (const event of sseEvents(res)) yield event.data;
}

/** SSE events as they arrive, with their `id` (a sequence number; none on `[DONE]`). */
async function* sseEvents(res: Response): AsyncGenerator<{ id: number | null; data: any }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = block.split('\n');
      const data = fields.find((l) => l.startsWith('data: '))?.slice(6);
      const id = fields.find((l) => l.startsWith('id: '))?.slice(4);
      if (data)
        yield { id: id === undefined ? null : Number(id), data: data === '[DONE]' ? data : JSON.parse(data) };
      end = buffer.indexOf('\n\n');
    }
  }
}

async function main() {
  const fake = await startFakeOpenAi();
  fake.fallback = () => ({
    tokens: Array.from({ length: TOKENS }, (_, i) => `token${i} `),
    delayMs: TOKEN_INTERVAL_MS,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-openai-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [join(root, 'packages/rest-bridge/src/cli.ts'), 'serve', '--no-worker'],
    {
      env: {
        ...process.env,
        PORT: String(port),
        KAS_DATA_DIR: dataDir,
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

    const ndjsonTurn = async () => {
      const firstTokens = fake.firstTokenAt.length;
      const res = await fetch(`${url}/api/chat/send-chat-message`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: 'Tell me', chat_session_info: {} }),
      });
      let firstAt = 0;
      let sessionId = '';
      for await (const line of ndjson(res)) {
        if (line.chat_session_id) sessionId = line.chat_session_id;
        if (line.obj?.type === 'message_delta' && !firstAt) firstAt = performance.now();
      }
      return { delta: firstAt - fake.firstTokenAt[firstTokens]!, sessionId };
    };
    const sseTurn = async () => {
      const firstTokens = fake.firstTokenAt.length;
      const res = await streamCompletion(url, headers);
      let firstAt = 0;
      let id = '';
      let error = res.status !== 200;
      let done = false;
      for await (const event of sse(res)) {
        if (event === '[DONE]') done = true;
        else if (event.error) error = true;
        else {
          id = event.id;
          if (event.choices[0]?.delta?.content && !firstAt) firstAt = performance.now();
        }
      }
      return { delta: firstAt - fake.firstTokenAt[firstTokens]!, id, error: error || !done };
    };

    for (let i = 0; i < WARMUP; i++) {
      await ndjsonTurn();
      await sseTurn();
    }
    const ndjsonDelta: number[] = [];
    const sseDelta: number[] = [];
    const sessions: string[] = [];
    const completions: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const a = await ndjsonTurn();
      const b = await sseTurn();
      ndjsonDelta.push(a.delta);
      sseDelta.push(b.delta);
      sessions.push(a.sessionId);
      completions.push(b.id);
    }
    const overhead = sseDelta.map((d, i) => d - ndjsonDelta[i]!);

    const resumeNdjson: number[] = [];
    const resumeSse: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      let t0 = performance.now();
      let res = await fetch(`${url}/api/chat/chat-session/${sessions[i]}/resume-stream?cursor=0`, {
        headers,
      });
      for await (const _ of ndjson(res)) {
        resumeNdjson.push(performance.now() - t0);
        break;
      }
      await res.body?.cancel().catch(() => {});
      t0 = performance.now();
      res = await fetch(`${url}/v1/chat/completions/${completions[i]}?stream=true`, { headers });
      for await (const _ of sse(res)) {
        resumeSse.push(performance.now() - t0);
        break;
      }
      await res.body?.cancel().catch(() => {});
    }

    const started = performance.now();
    const results = await Promise.all(Array.from({ length: CONCURRENT }, () => sseTurn()));
    const concurrentMs = performance.now() - started;

    const report = {
      runs: RUNS,
      first_token_to_client_ms: {
        ndjson_p50: percentile(ndjsonDelta, 50),
        openai_sse_p50: percentile(sseDelta, 50),
        openai_minus_ndjson_p50: percentile(overhead, 50),
        openai_minus_ndjson_p95: percentile(overhead, 95),
      },
      resume_first_replayed_line_ms: {
        ndjson_p50: percentile(resumeNdjson, 50),
        ndjson_p95: percentile(resumeNdjson, 95),
        openai_sse_p50: percentile(resumeSse, 50),
        openai_sse_p95: percentile(resumeSse, 95),
      },
      concurrent_openai_streams: {
        streams: CONCURRENT,
        errors: results.filter((r) => r.error).length,
        total_ms: Math.round(concurrentMs),
        ideal_ms: TOKENS * TOKEN_INTERVAL_MS,
      },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (report.concurrent_openai_streams.errors) process.exitCode = 1;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    rmSync(dataDir, { recursive: true, force: true });
  }
  try {
    await cutAndResume(fake);
  } finally {
    await fake.close();
  }
}

function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Math.round(Number(kb) / 1024);
}

const random = (n: number) => Math.floor(Math.random() * n);

/** Live answers cut and resumed in the process running them and in another, then the soak. */
async function cutAndResume(fake: FakeLlmServer) {
  const postgres = await startPostgres();
  const env = {
    DATABASE_URL: postgres.url,
    KAS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    KAS_LLM_PROVIDER: 'openai',
    KAS_LLM_BASE_URL: fake.baseURL,
    KAS_STREAM_BUFFER_MAX_AGE_S: String(SOAK_BUFFER_AGE_S),
  };
  const kas = [await spawnKas(env), await spawnKas(env)];
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  const headers = { authorization: `Bearer ${SPAWNED_ADMIN_KEY}`, 'content-type': 'application/json' };
  try {
    /** An answer started on `on`, its stream dropped after `cutAfter` lines, resumed on `resumeOn`. */
    const ndjsonCut = async (on: string, resumeOn: string, cutAfter: number) => {
      const abort = new AbortController();
      const res = await fetch(`${on}/api/chat/send-chat-message`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: 'Tell me', chat_session_info: {} }),
        signal: abort.signal,
      });
      const cut: Array<Record<string, any>> = [];
      for await (const line of ndjson(res)) {
        cut.push(line);
        if (cut.length >= cutAfter) break;
      }
      abort.abort();
      const t0 = performance.now();
      const resumed = await fetch(
        `${resumeOn}/api/chat/chat-session/${cut[0]!.chat_session_id}/resume-stream?cursor=${cut.length}`,
        { headers },
      );
      let firstMs = Number.NaN;
      const rest: Array<Record<string, any>> = [];
      for await (const line of ndjson(resumed)) {
        if (Number.isNaN(firstMs)) firstMs = performance.now() - t0;
        rest.push(line);
      }
      const whole = [...cut, ...rest];
      const ok =
        resumed.status === 200 && whole.at(-1)?.obj?.type === 'stop' && answerOf(whole) === EXPECTED_ANSWER;
      const why = ok
        ? null
        : `ndjson ${on === resumeOn ? 'same' : 'other'} process: HTTP ${resumed.status}, ${cut.length} lines cut, ${rest.length} resumed, last ${JSON.stringify(whole.at(-1))}`;
      return { firstMs, ok, why };
    };
    const openaiCut = async (on: string, resumeOn: string, cutAfter: number) => {
      const abort = new AbortController();
      const res = await streamCompletion(on, headers, abort.signal);
      let content = '';
      let id = '';
      let last = -1;
      for await (const event of sseEvents(res)) {
        if (event.data === '[DONE]') break;
        id = event.data.id;
        last = event.id!;
        content += event.data.choices[0]?.delta?.content ?? '';
        if (last + 1 >= cutAfter) break;
      }
      abort.abort();
      const t0 = performance.now();
      const resumed = await fetch(
        `${resumeOn}/v1/chat/completions/${id}?stream=true&starting_after=${last}`,
        {
          headers,
        },
      );
      let firstMs = Number.NaN;
      let done = false;
      let inOrder = true;
      for await (const event of sseEvents(resumed)) {
        if (Number.isNaN(firstMs)) firstMs = performance.now() - t0;
        if (event.data === '[DONE]') done = true;
        else {
          inOrder &&= event.id === ++last && !event.data.error;
          content += event.data.choices[0]?.delta?.content ?? '';
        }
      }
      const ok = resumed.status === 200 && done && inOrder && content === EXPECTED_ANSWER;
      const why = ok
        ? null
        : `openai ${on === resumeOn ? 'same' : 'other'} process: HTTP ${resumed.status}, starting_after ${last}, done ${done}, in order ${inOrder}, ${content.length} of ${EXPECTED_ANSWER.length} characters`;
      return { firstMs, ok, why };
    };
    const urls = kas.map((k) => k.url);
    for (let i = 0; i < WARMUP; i++) {
      await ndjsonCut(urls[0]!, urls[1]!, 5);
      await openaiCut(urls[0]!, urls[0]!, 5);
    }
    const figures: Record<string, { p50: number; p95: number; whole: string }> = {};
    for (const [name, cut, other] of [
      ['ndjson_same_process', ndjsonCut, 0],
      ['ndjson_other_process', ndjsonCut, 1],
      ['openai_sse_same_process', openaiCut, 0],
      ['openai_sse_other_process', openaiCut, 1],
    ] as const) {
      const runs = [];
      for (let i = 0; i < RUNS; i++) runs.push(await cut(urls[0]!, urls[other]!, 3 + random(TOKENS)));
      figures[name] = {
        p50: percentile(
          runs.map((r) => r.firstMs),
          50,
        ),
        p95: percentile(
          runs.map((r) => r.firstMs),
          95,
        ),
        whole: `${runs.filter((r) => r.ok).length}/${runs.length}`,
      };
    }
    process.stdout.write(
      `${JSON.stringify({ live_answer_cut_and_resumed_first_replayed_line_ms: figures }, null, 2)}\n`,
    );
    if (Object.values(figures).some((f) => !f.whole.startsWith(`${RUNS}/`))) process.exitCode = 1;
    if (SOAK_S <= 0) return;

    const samples: Array<Record<string, number>> = [];
    const soakStarted = Date.now();
    let turns = 0;
    let broken = 0;
    const whys: string[] = [];
    const sample = async () => {
      const { rows } = await db.query(
        `SELECT count(*)::int AS lines, count(DISTINCT message_id)::int AS answers,
                coalesce(sum(octet_length(line)), 0)::int AS line_bytes,
                pg_total_relation_size('chat_stream_lines')::int AS table_bytes
           FROM chat_stream_lines`,
      );
      samples.push({
        s: Math.round((Date.now() - soakStarted) / 1000),
        turns,
        broken,
        rss_a_mb: rssMb(kas[0]!.pid),
        rss_b_mb: rssMb(kas[1]!.pid),
        ...rows[0],
      });
    };
    await sample();
    const timer = setInterval(() => void sample(), SAMPLE_S * 1000);
    const end = soakStarted + SOAK_S * 1000;
    await Promise.all(
      Array.from({ length: SOAK_CLIENTS }, async () => {
        while (Date.now() < end) {
          const cut = random(2) ? ndjsonCut : openaiCut;
          const result = await cut(urls[random(2)]!, urls[random(2)]!, 2 + random(TOKENS + 2)).catch(
            (error: unknown) => ({ ok: false, why: String(error) }),
          );
          turns++;
          if (!result.ok) {
            broken++;
            if (whys.length < 10) whys.push(result.why!);
          }
        }
      }),
    );
    clearInterval(timer);
    await sample();
    const first = samples[0]!;
    const lastSample = samples.at(-1)!;
    process.stdout.write(
      `${JSON.stringify(
        {
          soak: {
            seconds: SOAK_S,
            buffer_max_age_s: SOAK_BUFFER_AGE_S,
            turns,
            not_whole: broken,
            not_whole_first: whys,
            rss_mb: {
              a: [first.rss_a_mb, lastSample.rss_a_mb],
              b: [first.rss_b_mb, lastSample.rss_b_mb],
            },
            samples,
          },
        },
        null,
        2,
      )}\n`,
    );
    if (broken) process.exitCode = 1;
  } finally {
    await db.end();
    for (const k of kas) await k.stop();
    await postgres.stop();
  }
}

await main();
