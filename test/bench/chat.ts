/**
 * Chat benchmark. kas runs in its own process (embedded database) with the OpenAI-compatible provider
 * pointed at a local fake model that streams at a fixed rate; the fake and the client run here, on one
 * clock. Measures:
 *   - stream overhead: the fake's first token → the client's first `message_delta` (target p50 ≤ 5 ms);
 *   - time before the model is called: the client sends → the fake receives the request (p50 ≤ 30 ms);
 *   - 50 concurrent streams: all complete, none with an error.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ndjson } from '../e2e/chat-helpers.ts';
import { startFakeOpenAi } from '../fakes/openai.ts';
import { freePort } from '../harness/net.ts';

const root = join(import.meta.dirname, '../..');
const SEQUENTIAL = Number(process.env.BENCH_CHAT_RUNS ?? 60);
const CONCURRENT = 50;
const TOKENS = 20;
const TOKEN_INTERVAL_MS = 10;
const ADMIN_KEY = `svck-${'B'.repeat(43)}`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2));
}

async function main() {
  const fake = await startFakeOpenAi();
  fake.fallback = () => ({
    tokens: Array.from({ length: TOKENS }, (_, i) => `token${i} `),
    delayMs: TOKEN_INTERVAL_MS,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-chat-'));
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
    const { chat_session_id } = await (
      await fetch(`${url}/api/chat/create-chat-session`, { method: 'POST', headers, body: '{}' })
    ).json();

    const turn = async (sessionId: string | null) => {
      const requestIndex = fake.requestAt.length;
      const sentAt = performance.now();
      const res = await fetch(`${url}/api/chat/send-chat-message`, {
        method: 'POST',
        headers,
        body: JSON.stringify(
          sessionId
            ? { message: 'Benchmark question', chat_session_id: sessionId, parent_message_id: null }
            : { message: 'Benchmark question', chat_session_info: {} },
        ),
      });
      let firstDeltaAt = 0;
      let error = false;
      let stopped = false;
      for await (const line of ndjson(res)) {
        if (line.obj?.type === 'message_delta' && !firstDeltaAt) firstDeltaAt = performance.now();
        if (line.error) error = true;
        if (line.obj?.type === 'stop') stopped = true;
      }
      return { sentAt, firstDeltaAt, error: error || !stopped || res.status !== 200, requestIndex };
    };

    for (let i = 0; i < 5; i++) await turn(chat_session_id);
    const overhead: number[] = [];
    const before: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) {
      const firstTokens = fake.firstTokenAt.length;
      const r = await turn(chat_session_id);
      overhead.push(r.firstDeltaAt - fake.firstTokenAt[firstTokens]!);
      before.push(fake.requestAt[r.requestIndex]! - r.sentAt);
    }

    const started = performance.now();
    const results = await Promise.all(Array.from({ length: CONCURRENT }, () => turn(null)));
    const concurrentMs = performance.now() - started;

    const report = {
      sequential_turns: SEQUENTIAL,
      first_token_to_client_delta_ms: {
        p50: percentile(overhead, 50),
        p95: percentile(overhead, 95),
        max: percentile(overhead, 100),
      },
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
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
