/**
 * Streams that survive disconnects, across processes: a client cut off from process A after K lines
 * resumes the same answer from process B (same Postgres), and what it has equals the uninterrupted stream.
 */
import type { ChildProcess } from 'node:child_process';
import { createKasClient } from '@kas/sdk';
import { createTestDatabase, type TestDatabase } from '@kas/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { serve } from '../harness/process.ts';

const ADMIN_KEY = `svck-${'R'.repeat(43)}`;
type Json = Record<string, any>;

/** Reads NDJSON lines until `take` of them (then cuts the connection) or the end. */
async function readLines(res: Response, take = Number.POSITIVE_INFINITY, abort?: AbortController) {
  const lines: Json[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  while (lines.length < take) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let nl = buffer.indexOf('\n');
    while (nl !== -1 && lines.length < take) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) lines.push(JSON.parse(line));
      nl = buffer.indexOf('\n');
    }
  }
  if (lines.length >= take) {
    abort?.abort();
    await reader.cancel().catch(() => {});
  }
  return lines;
}

/** Reads SSE events (`id`, parsed `data`) until `take` of them (then cuts the connection) or the end. */
async function readEvents(res: Response, take = Number.POSITIVE_INFINITY, abort?: AbortController) {
  const events: Array<{ id: string | null; data: any }> = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  while (events.length < take) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1 && events.length < take) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!block.startsWith(':')) {
        const lines = block.split('\n');
        const data = lines.find((l) => l.startsWith('data: '))!.slice(6);
        events.push({
          id: lines.find((l) => l.startsWith('id: '))?.slice(4) ?? null,
          data: data === '[DONE]' ? data : JSON.parse(data),
        });
      }
      end = buffer.indexOf('\n\n');
    }
  }
  if (events.length >= take) {
    abort?.abort();
    await reader.cancel().catch(() => {});
  }
  return events;
}

/** A stream's lines without the ids that differ between two runs. */
function shape(lines: Json[]) {
  return lines.map((l) =>
    l.chat_session_id
      ? { chat_session_id: 'id' }
      : l.reserved_assistant_message_id
        ? { ids: true }
        : l.obj?.type === 'message_start'
          ? { ...l, obj: { ...l.obj, pre_answer_processing_seconds: 0 } }
          : l,
  );
}

describe('resumable chat streams across two processes on one Postgres', () => {
  let db: TestDatabase;
  let fake: FakeLlmServer;
  let a: { url: string; child: ChildProcess };
  let b: { url: string; child: ChildProcess };
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  const tokens = Array.from({ length: 40 }, (_, i) => `t${i} `);

  const key = async (name: string) => {
    const res = await fetch(`${a.url}/api/admin/api-key`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ role: 'basic', name }),
    });
    return { authorization: `Bearer ${(await res.json()).api_key}`, 'content-type': 'application/json' };
  };
  const send = (url: string, headers: Record<string, string>, signal?: AbortSignal) =>
    fetch(`${url}/api/chat/send-chat-message`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: 'Count for me', chat_session_info: {} }),
      ...(signal ? { signal } : {}),
    });
  const resume = (url: string, headers: Record<string, string>, sessionId: string, cursor: number) =>
    fetch(`${url}/api/chat/chat-session/${sessionId}/resume-stream?cursor=${cursor}`, { headers });

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    fake = await startFakeOpenAi();
    const env = {
      ...db.env,
      HOST: '127.0.0.1',
      KAS_LOG_LEVEL: 'warn',
      KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
      KAS_LLM_PROVIDER: 'openai',
      KAS_LLM_BASE_URL: fake.baseURL,
      KAS_RATE_LIMIT_PER_MINUTE: '0',
      KAS_STREAM_BUFFER_POLL_MS: '20',
    };
    a = await serve(env, 30_000, ['--no-worker']);
    b = await serve(env, 30_000, ['--no-worker']);
    alice = await key('alice');
    bob = await key('bob');
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

  it('cut after K lines on A, resumed on B: the concatenation equals an uninterrupted run', async () => {
    fake.enqueue({ tokens, delayMs: 5 });
    const whole = await readLines(await send(a.url, alice));
    expect(whole.at(-1)).toMatchObject({ obj: { type: 'stop' } });

    const K = 6;
    fake.enqueue({ tokens, delayMs: 30 });
    const abort = new AbortController();
    const first = await readLines(await send(a.url, alice, abort.signal), K, abort);
    expect(first).toHaveLength(K);
    const sessionId = first[0]!.chat_session_id as string;

    const detail = await (
      await fetch(`${b.url}/api/chat/get-chat-session/${sessionId}`, { headers: alice })
    ).json();
    expect(detail.run_in_progress).toBe(true);

    expect((await resume(b.url, bob, sessionId, K)).status).toBe(404);

    const started = performance.now();
    const res = await resume(b.url, alice, sessionId, K);
    expect(res.status).toBe(200);
    const rest = await readLines(res);
    expect(performance.now() - started).toBeLessThan(30_000);
    const joined = [...first, ...rest];
    expect(shape(joined)).toEqual(shape(whole));
    expect(joined.map((l) => l.obj?.content ?? '').join('')).toBe(tokens.join(''));

    // Once ended: a replay from 0 on either process is the same lines, and the detail shows no run.
    const replay = await readLines(await resume(a.url, alice, sessionId, 0));
    expect(replay).toEqual(joined);
    const after = await (
      await fetch(`${b.url}/api/chat/get-chat-session/${sessionId}`, { headers: alice })
    ).json();
    expect(after.run_in_progress).toBe(false);
  });

  it('resumes an OpenAI-compatible stream on B after N events on A, as /v1/chat/completions/{id}', async () => {
    const body = JSON.stringify({
      model: 'kas',
      stream: true,
      messages: [{ role: 'user', content: 'Count' }],
    });
    fake.enqueue({ tokens, delayMs: 5 });
    const whole = await readEvents(
      await fetch(`${a.url}/v1/chat/completions`, { method: 'POST', headers: alice, body }),
    );
    expect(whole.at(-1)!.data).toBe('[DONE]');

    const K = 5;
    fake.enqueue({ tokens, delayMs: 30 });
    const abort = new AbortController();
    const first = await readEvents(
      await fetch(`${a.url}/v1/chat/completions`, {
        method: 'POST',
        headers: alice,
        body,
        signal: abort.signal,
      }),
      K,
      abort,
    );
    const id = first[0]!.data.id as string;
    const url = (base: string, after: number) =>
      `${base}/v1/chat/completions/${id}?stream=true&starting_after=${after}`;
    expect((await fetch(url(b.url, K - 1), { headers: bob })).status).toBe(404);
    const rest = await readEvents(await fetch(url(b.url, K - 1), { headers: alice }));
    const joined = [...first, ...rest];
    expect(joined.map((e) => e.id)).toEqual([...whole.slice(0, -1).map((_, i) => String(i)), null]);
    const strip = (events: typeof whole) =>
      events.map((e) => (e.data === '[DONE]' ? e.data : { ...e.data, id: 'x', created: 0 }));
    expect(strip(joined)).toEqual(strip(whole));
    expect(
      joined
        .slice(0, -1)
        .map((e) => e.data.choices[0].delta.content ?? '')
        .join(''),
    ).toBe(tokens.join(''));
    const replay = await readEvents(await fetch(url(a.url, -1), { headers: alice }));
    expect(replay).toEqual(joined);
  });

  it('SDK: chat.stream() resumes by itself after the connection drops (here: to the other process)', async () => {
    const K = 7;
    const cutting: typeof fetch = async (input, init) => {
      const url = String(input);
      if (url.includes('/resume-stream')) return fetch(url.replace(a.url, b.url), init);
      const res = await fetch(input, init);
      if (!url.endsWith('/send-chat-message')) return res;
      // A body that fails after K lines, as a dropped connection does.
      const reader = res.body!.getReader();
      let newlines = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (newlines >= K) {
            await reader.cancel();
            controller.error(new TypeError('terminated'));
            return;
          }
          const { done, value } = await reader.read();
          if (done) return controller.close();
          const text = new TextDecoder().decode(value);
          let cut = -1;
          for (let i = 0; i < text.length && cut === -1; i++)
            if (text[i] === '\n' && ++newlines === K) cut = i + 1;
          controller.enqueue(cut === -1 ? value : new TextEncoder().encode(text.slice(0, cut)));
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const kas = createKasClient({
      baseUrl: a.url,
      apiKey: alice.authorization!.slice('Bearer '.length),
      fetch: cutting,
    });
    expect(kas.openaiBaseUrl).toBe(`${a.url}/v1`);
    fake.enqueue({ tokens, delayMs: 20 });
    const lines: Json[] = [];
    for await (const line of kas.chat.stream({ message: 'Count', chat_session_info: {} })) lines.push(line);
    expect(lines.at(-1)).toMatchObject({ obj: { type: 'stop' } });
    expect(lines.map((l) => l.obj?.content ?? '').join('')).toBe(tokens.join(''));
    const replay = await readLines(await resume(a.url, alice, lines[0]!.chat_session_id, 0));
    expect(lines).toEqual(replay);

    fake.enqueue({ tokens, delayMs: 20 });
    const off: Json[] = [];
    const readAll = async () => {
      for await (const line of kas.chat.stream(
        { message: 'Count', chat_session_info: {} },
        { resume: false },
      ))
        off.push(line);
    };
    await expect(readAll()).rejects.toThrow('terminated');
    expect(off).toHaveLength(K);
  });

  it('answers 404 for a session with no streamed answer', async () => {
    const created = await fetch(`${a.url}/api/chat/create-chat-session`, {
      method: 'POST',
      headers: alice,
      body: JSON.stringify({ persona_id: 0 }),
    });
    const { chat_session_id } = await created.json();
    const res = await resume(b.url, alice, chat_session_id, 0);
    expect(res.status).toBe(404);
    expect((await res.json()).error_code).toBe('NOT_FOUND');
  });
});
