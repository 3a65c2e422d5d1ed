/**
 * OpenAI-compatible surface and resumable streams. kas runs in its own process (embedded database) with
 * the OpenAI-compatible provider pointed at a local fake model streaming at a fixed rate; the fake and
 * the client run here, on one clock. Measures:
 *   - first content token to client: the fake's first token → the first `message_delta` line (NDJSON) and
 *     → the first content chunk (SSE, /v1), p50 of each and of their difference (target ≤ 5 ms);
 *   - 50 concurrent /v1 streams: all complete, none with an error;
 *   - resume: request → first replayed line of `resume-stream?cursor=0` and of
 *     `/v1/chat/completions/{id}?stream=true` (target p50 ≤ 20 ms).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ndjson } from '../e2e/chat-helpers.ts';
import { startFakeOpenAi } from '../fakes/openai.ts';
import { freePort } from '../harness/net.ts';

const root = join(import.meta.dirname, '../..');
const RUNS = Number(process.env.BENCH_OPENAI_RUNS ?? 40);
const WARMUP = 5;
const CONCURRENT = 50;
const TOKENS = 20;
const TOKEN_INTERVAL_MS = 10;
const ADMIN_KEY = `svck-${'O'.repeat(43)}`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2));
}

/** SSE events as they arrive: each `data` parsed (`[DONE]` as is). */
async function* sse(res: Response): AsyncGenerator<any> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split('\n')
        .find((l) => l.startsWith('data: '))
        ?.slice(6);
      if (data) yield data === '[DONE]' ? data : JSON.parse(data);
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
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: 'kas',
          stream: true,
          messages: [{ role: 'user', content: 'Tell me' }],
        }),
      });
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
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
