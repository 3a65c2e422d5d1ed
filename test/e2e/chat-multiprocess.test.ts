import type { ChildProcess } from 'node:child_process';
import { createTestDatabase, type TestDatabase } from '@kas/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { serve } from '../harness/process.ts';
import { ndjson } from './chat-helpers.ts';

const ADMIN_KEY = `svck-${'M'.repeat(43)}`;

interface Proc {
  url: string;
  child: ChildProcess;
}

/** A `kas serve` process without the worker, on the test's database. */
function startProcess(env: Record<string, string>): Promise<Proc> {
  return serve({ ...env, HOST: '127.0.0.1', KAS_LOG_LEVEL: 'warn' }, 30_000, ['--no-worker']);
}

describe('two server processes on one Postgres', () => {
  let db: TestDatabase;
  let fake: FakeLlmServer;
  let a: { url: string; child: ChildProcess };
  let b: { url: string; child: ChildProcess };

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    fake = await startFakeOpenAi();
    const env = {
      ...db.env,
      KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
      KAS_LLM_PROVIDER: 'openai',
      KAS_LLM_BASE_URL: fake.baseURL,
      KAS_RATE_LIMIT_PER_MINUTE: '0',
    };
    a = await startProcess(env);
    b = await startProcess(env);
  }, 60_000);
  afterAll(async () => {
    for (const p of [a, b]) if (p) p.child.kill('SIGTERM');
    await Promise.all(
      [a, b]
        .filter(Boolean)
        .map((p) => new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)))),
    );
    await fake?.close();
    await db?.drop();
  });

  it('ends the stream on process A with user_cancelled within 200 ms of a stop sent to process B', async () => {
    const keyRes = await fetch(`${a.url}/api/admin/api-key`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ role: 'basic' }),
    });
    const key = (await keyRes.json()).api_key as string;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    fake.enqueue({ tokens: Array.from({ length: 300 }, (_, i) => `t${i} `), delayMs: 20 });
    const res = await fetch(`${a.url}/api/chat/send-chat-message`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: 'Talk for a long time', chat_session_info: {} }),
    });
    let sessionId = '';
    let deltas = 0;
    let stopSentAt = 0;
    let last: Record<string, any> = {};
    for await (const line of ndjson(res)) {
      last = line;
      if (line.chat_session_id) sessionId = line.chat_session_id;
      if (line.obj?.type === 'message_delta' && ++deltas === 3) {
        stopSentAt = performance.now();
        const stop = await fetch(`${b.url}/api/chat/stop-chat-session/${sessionId}`, {
          method: 'POST',
          headers,
        });
        expect(await stop.json()).toEqual({ message: 'Chat session stopped' });
      }
    }
    const elapsed = performance.now() - stopSentAt;
    expect(last).toMatchObject({ obj: { type: 'stop', stop_reason: 'user_cancelled' } });
    expect(elapsed).toBeLessThan(200);
    const session = await (
      await fetch(`${b.url}/api/chat/get-chat-session/${sessionId}`, { headers })
    ).json();
    const saved: string = session.messages.at(-1).message;
    expect(saved.startsWith('t0 t1 t2 ')).toBe(true);
    expect(saved).toContain('Generation was stopped by the user.');
  });

  it('holds a token budget across processes: 16 questions at once to A and B, one answered', async () => {
    const adminHeaders = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
    const keyRes = await fetch(`${a.url}/api/admin/api-key`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ role: 'limited' }),
    });
    const key = (await keyRes.json()).api_key as string;
    const budget = await fetch(`${b.url}/api/admin/token-rate-limits/users`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ enabled: true, token_budget: 1, period_hours: 1 }),
    });
    expect(budget.status).toBe(200);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    fake.fallback = () => ({ tokens: Array.from({ length: 50 }, (_, i) => `word${i} `), delayMs: 10 });
    try {
      const statuses = await Promise.all(
        Array.from({ length: 16 }, async (_, i) => {
          const res = await fetch(`${(i % 2 ? a : b).url}/api/chat/send-chat-message`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ message: `Question ${i}`, chat_session_info: {}, stream: false }),
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    } finally {
      fake.fallback = () => ({ tokens: ['Hello.'] });
      const { token_id } = await budget.json();
      await fetch(`${a.url}/api/admin/token-rate-limits/rate-limit/${token_id}`, {
        method: 'DELETE',
        headers: adminHeaders,
      });
    }
  });
});
