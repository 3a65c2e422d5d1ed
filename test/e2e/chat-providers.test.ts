import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../fakes/anthropic.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { answerOf, ndjson, readAll, typesOf } from './chat-helpers.ts';

const providers = [
  ['openai', startFakeOpenAi],
  ['anthropic', startFakeAnthropic],
] as const;

describe.each(providers)('chat through the %s provider', (provider, startFake) => {
  let fake: FakeLlmServer;
  let s: TestServer;
  let key: string;

  beforeAll(async () => {
    fake = await startFake();
    s = await startTestServer({
      env: {
        KAS_LLM_PROVIDER: provider,
        KAS_LLM_BASE_URL: fake.baseURL,
        KAS_LLM_API_KEY: 'test-key',
        KAS_LLM_MODEL: 'fake-model',
        KAS_LLM_MODELS: 'override-model',
      },
    });
    key = (await s.createKey('basic')).key;
    const ingest = await s.request('POST', '/api/svc-api/ingestion', {
      key: s.adminKey,
      body: {
        document: {
          id: 'kb-rockets',
          semantic_identifier: 'Rocket handbook',
          sections: [
            {
              text: 'The Falcon rocket uses kerosene and liquid oxygen.',
              link: 'https://kb.example/rockets',
            },
          ],
        },
      },
    });
    expect(ingest.status).toBe(200);
  });
  afterAll(async () => {
    await s?.close();
    await fake?.close();
  });

  const send = (body: Record<string, unknown>) =>
    s.request('POST', '/api/chat/send-chat-message', { key, body });

  it('streams the model tokens and persists the answer', async () => {
    fake.enqueue({ tokens: ['Hi', ' there', '!'] });
    const res = await send({ message: 'Say hi', chat_session_info: {} });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const lines = await readAll(res);
    expect(Object.keys(lines[0]!)).toEqual(['chat_session_id']);
    expect(lines[1]).toEqual({
      user_message_id: expect.any(Number),
      reserved_assistant_message_id: expect.any(Number),
    });
    expect(answerOf(lines)).toBe('Hi there!');
    expect(lines.at(-1)).toMatchObject({ obj: { type: 'stop', stop_reason: null } });
    const request = fake.requests.at(-1)!;
    expect(request.model).toBe('fake-model');
    expect(request.stream).toBe(true);
    expect(JSON.stringify(request.messages)).toContain('Say hi');
    const session = await (
      await s.request('GET', `/api/chat/get-chat-session/${lines[0]!.chat_session_id}`, { key })
    ).json();
    expect(session.messages.at(-1)).toMatchObject({
      message_type: 'assistant',
      message: 'Hi there!',
      error: null,
    });
  });

  it('runs the search tool the model calls and rewrites its citations', async () => {
    fake.enqueue(
      {
        toolCalls: [
          { id: 'call_1', name: 'internal_search', arguments: JSON.stringify({ queries: ['Falcon fuel'] }) },
        ],
      },
      { tokens: ['Falcon burns kerosene', ' [1', '].', ' Also [7].'] },
    );
    const lines = await readAll(await send({ message: 'What fuel does Falcon use?', chat_session_info: {} }));
    expect(typesOf(lines).slice(0, 4)).toEqual([
      'search_tool_start',
      'search_tool_queries_delta',
      'search_tool_documents_delta',
      'section_end',
    ]);
    expect(lines.find((l) => l.obj?.type === 'search_tool_queries_delta')!.obj.queries).toEqual([
      'Falcon fuel',
    ]);
    expect(answerOf(lines)).toBe('Falcon burns kerosene [[1]](https://kb.example/rockets). Also .');
    expect(lines.filter((l) => l.obj?.type === 'citation_info').map((l) => l.obj)).toEqual([
      { type: 'citation_info', citation_number: 1, document_id: 'kb-rockets' },
    ]);
    const second = fake.requests.at(-1)!;
    const serialized = JSON.stringify(second.messages);
    expect(serialized).toContain('kerosene and liquid oxygen');
    expect(serialized).toContain('[1]');
    const placement = lines.find((l) => l.obj?.type === 'message_start')!.placement;
    expect(placement.turn_index).toBe(1);
  });

  it('answers 502 LLM_PROVIDER_ERROR when the provider fails before the stream', async () => {
    fake.enqueue({ status: 500 });
    const res = await send({ message: 'Fail please', chat_session_info: { description: 'failing' } });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({
      error_code: 'LLM_PROVIDER_ERROR',
      detail: expect.stringContaining('500'),
    });
    const list = await (await s.request('GET', '/api/chat/get-user-chat-sessions', { key })).json();
    expect(list.sessions.some((x: { name: string }) => x.name === 'failing')).toBe(false);
    const all = await (
      await s.request('GET', '/api/chat/get-user-chat-sessions?include_failed_chats=true', { key })
    ).json();
    expect(all.sessions.some((x: { name: string }) => x.name === 'failing')).toBe(true);
  });

  it('ends with an error line carrying is_retryable when the provider fails mid-stream', async () => {
    fake.enqueue({ tokens: ['Partial', ' answer', ' never'], failAfter: 2 });
    const lines = await readAll(await send({ message: 'Break midway', chat_session_info: {} }));
    const last = lines.at(-1)!;
    expect(last).toEqual({ error: expect.any(String), error_code: 'LLM_PROVIDER_ERROR', is_retryable: true });
    expect(typesOf(lines)).not.toContain('stop');
    expect(answerOf(lines)).toBe('Partial answer');
  });

  it('stops a slow stream within 200 ms, keeping the partial answer', async () => {
    fake.enqueue({ tokens: Array.from({ length: 200 }, (_, i) => `w${i} `), delayMs: 20 });
    const res = await send({ message: 'Talk slowly', chat_session_info: {} });
    let sessionId = '';
    let deltas = 0;
    let stoppedAt = 0;
    const lines: Array<Record<string, any>> = [];
    for await (const line of ndjson(res)) {
      lines.push(line);
      if (line.chat_session_id) sessionId = line.chat_session_id;
      if (line.obj?.type === 'message_delta' && ++deltas === 3) {
        stoppedAt = performance.now();
        const stop = await s.request('POST', `/api/chat/stop-chat-session/${sessionId}`, { key });
        expect(stop.status).toBe(200);
        expect(await stop.json()).toEqual({ message: 'Chat session stopped' });
      }
    }
    const elapsed = performance.now() - stoppedAt;
    expect(lines.at(-1)).toMatchObject({ obj: { type: 'stop', stop_reason: 'user_cancelled' } });
    expect(elapsed).toBeLessThan(200);
    const session = await (await s.request('GET', `/api/chat/get-chat-session/${sessionId}`, { key })).json();
    const saved = session.messages.at(-1).message as string;
    expect(saved).toMatch(/^w0 w1 w2 /);
    expect(saved).toContain('Generation was stopped by the user.');
  });

  it('completes and saves the answer after the client disconnects', async () => {
    fake.enqueue({ tokens: ['one ', 'two ', 'three ', 'four.'], delayMs: 30 });
    const controller = new AbortController();
    const res = await fetch(`${s.url}/api/chat/send-chat-message`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Count', chat_session_info: {} }),
      signal: controller.signal,
    });
    let sessionId = '';
    try {
      for await (const line of ndjson(res)) {
        if (line.chat_session_id) sessionId = line.chat_session_id;
        if (line.obj?.type === 'message_delta') controller.abort();
      }
    } catch {}
    let message = '';
    for (let i = 0; i < 100 && message !== 'one two three four.'; i++) {
      await new Promise((r) => setTimeout(r, 30));
      const session = await (
        await s.request('GET', `/api/chat/get-chat-session/${sessionId}`, { key })
      ).json();
      message = session.messages.at(-1).message;
    }
    expect(message).toBe('one two three four.');
  });

  it('sends llm_override, additional_context and history, and never stores the extra context', async () => {
    fake.enqueue({ tokens: ['First.'] }, { tokens: ['Second.'] });
    const first = await readAll(await send({ message: 'Remember the word PLUM', chat_session_info: {} }));
    const sessionId = first[0]!.chat_session_id;
    const second = await readAll(
      await send({
        message: 'Which word?',
        chat_session_id: sessionId,
        llm_override: { model_name: 'override-model', temperature: 0.5 },
        additional_context: 'SECRET-CONTEXT-42',
      }),
    );
    expect(answerOf(second)).toBe('Second.');
    const request = fake.requests.at(-1)!;
    expect(request.model).toBe('override-model');
    expect(request.temperature).toBe(0.5);
    const text = JSON.stringify(request);
    expect(text).toContain('Remember the word PLUM');
    expect(text).toContain('First.');
    expect(text).toContain('SECRET-CONTEXT-42');
    const session = await (await s.request('GET', `/api/chat/get-chat-session/${sessionId}`, { key })).json();
    expect(JSON.stringify(session)).not.toContain('SECRET-CONTEXT-42');
    expect(session.current_alternate_model).toBe('override-model');
  });

  it('passes the text of an uploaded file to the model', async () => {
    const form = new FormData();
    form.append(
      'files',
      new Blob(['# Notes\nThe launch code is ZEBRA-7.'], { type: 'text/markdown' }),
      'notes.md',
    );
    const up = await fetch(`${s.url}/api/chat/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(up.status).toBe(200);
    const { files } = await up.json();
    expect(files).toEqual([{ id: expect.any(String), type: 'plain_text', name: 'notes.md' }]);
    fake.enqueue({ tokens: ['ok'] });
    const lines = await readAll(
      await send({ message: 'What is the code?', chat_session_info: {}, file_descriptors: files }),
    );
    expect(answerOf(lines)).toBe('ok');
    expect(JSON.stringify(fake.requests.at(-1)!.messages)).toContain('ZEBRA-7');
  });
});
