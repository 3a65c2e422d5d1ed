/**
 * The OpenAI-compatible surface at /v1 through the official `openai` client: models per agent, cited
 * answers (annotations and the citations array), streaming, the conversation and `store`, errors in
 * OpenAI's shape, and a mid-stream failure as an SSE error event.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

type Json = Record<string, any>;

/** The raw SSE events of a response: each event's `id` and `data`. */
async function sseEvents(res: Response): Promise<Array<{ id: string | null; data: string }>> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() && !block.startsWith(':'))
    .map((block) => {
      const lines = block.split('\n');
      const id = lines.find((l) => l.startsWith('id: '))?.slice(4) ?? null;
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { id, data };
    });
}

async function ingest(s: TestServer, id: string, title: string, text: string) {
  const res = await s.request('POST', '/api/svc-api/ingestion', {
    key: s.adminKey,
    body: {
      document: { id, semantic_identifier: title, sections: [{ text, link: `https://kb.example/${id}` }] },
    },
  });
  expect(res.status).toBe(200);
}

describe.each(['pglite', 'postgres'] as const)('OpenAI-compatible API on %s', (db) => {
  let s: TestServer;
  let alice: string;
  let limited: string;
  let privateAgent: number;
  const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${s.url}/v1`, maxRetries: 0 });

  beforeAll(async () => {
    s = await startTestServer({ db });
    alice = (await s.createKey('basic', 'alice')).key;
    limited = (await s.createKey('limited', 'lim')).key;
    await ingest(
      s,
      'kb-hr',
      'Vacation policy',
      'Employees receive 25 vacation days per year. Unused vacation days expire in March.',
    );
    await ingest(
      s,
      'kb-it',
      'Laptop policy',
      'Laptops are replaced every three years. Lost laptops must be reported to IT within one day.',
    );
    const created = await s.request('POST', '/api/persona', {
      key: s.adminKey,
      body: {
        name: 'Finance bot',
        description: 'private',
        system_prompt: '',
        task_prompt: '',
        datetime_aware: true,
        is_public: false,
        document_set_ids: [],
        tool_ids: [1],
        users: [],
        groups: [],
      },
    });
    expect(created.status).toBe(200);
    privateAgent = ((await created.json()) as Json).id;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('lists one model per agent the caller may use, and kas for the default agent', async () => {
    const ids = async (key: string) => (await client(key).models.list()).data.map((m) => m.id);
    const mine = await ids(alice);
    expect(mine[0]).toBe('kas');
    expect(mine).toContain('agent-0');
    expect(mine).not.toContain(`agent-${privateAgent}`);
    expect(await ids(s.adminKey)).toContain(`agent-${privateAgent}`);
    expect((await client(limited).models.retrieve('kas')).id).toBe('kas');
  });

  it('answers with [n] markers, url_citation annotations and the citations array, saved in the history', async () => {
    const completion = await client(alice).chat.completions.create({
      model: 'kas',
      messages: [{ role: 'user', content: 'How many vacation days do employees get?' }],
    });
    expect(completion.object).toBe('chat.completion');
    const message = completion.choices[0]!.message;
    expect(message.content).toContain('25 vacation days');
    expect(message.content).toContain('[1]');
    expect(message.content).not.toContain('](');
    expect(message.annotations?.length).toBe(message.content!.match(/\[\d+\]/g)!.length);
    for (const a of message.annotations!) {
      expect(a.type).toBe('url_citation');
      expect(message.content!.slice(a.url_citation.start_index, a.url_citation.end_index)).toMatch(
        /^\[\d+\]$/,
      );
    }
    expect(message.annotations![0]!.url_citation).toMatchObject({
      url: 'https://kb.example/kb-hr',
      title: 'Vacation policy',
    });
    const raw = completion as unknown as Json;
    expect(raw.citations).toEqual(['https://kb.example/kb-hr']);
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    const session = (await (
      await s.request('GET', `/api/chat/get-chat-session/${raw.chat_session_id}`, { key: alice })
    ).json()) as Json;
    expect(session.messages.map((m: Json) => m.message_type)).toEqual(['system', 'user', 'assistant']);
  });

  it('streams chat.completion.chunk events whose text equals the whole answer, citations and usage last', async () => {
    const question = 'How often are laptops replaced?';
    const whole = await client(alice).chat.completions.create({
      model: 'agent-0',
      messages: [{ role: 'user', content: question }],
    });
    const stream = await client(alice).chat.completions.create({
      model: 'agent-0',
      messages: [{ role: 'user', content: question }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: Json[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe(whole.choices[0]!.message.content);
    const last = chunks.at(-1)!;
    expect(last.choices[0].finish_reason).toBe('stop');
    expect(last.choices[0].delta.annotations[0].url_citation).toMatchObject({
      url: 'https://kb.example/kb-it',
      title: 'Laptop policy',
    });
    expect(last.citations).toEqual(['https://kb.example/kb-it']);
    expect(last.usage.completion_tokens).toBeGreaterThan(0);
  });

  it('sends each SSE event with an id line and ends with [DONE]', async () => {
    const res = await s.request('POST', '/v1/chat/completions', {
      key: limited,
      body: { model: 'kas', stream: true, messages: [{ role: 'user', content: 'Vacation days?' }] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await sseEvents(res);
    expect(events.at(-1)).toEqual({ id: null, data: '[DONE]' });
    const data = events.slice(0, -1);
    expect(data.map((e) => e.id)).toEqual(data.map((_, i) => String(i)));
    expect(JSON.parse(data[0]!.data).choices[0].delta.role).toBe('assistant');
  });

  it('reads earlier messages as the conversation, system messages as context; store:false saves nothing', async () => {
    const before = (await (
      await s.request('GET', '/api/chat/get-user-chat-sessions', { key: alice })
    ).json()) as Json;
    const kept = (await client(alice).chat.completions.create({
      model: 'kas',
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi, how can I help?' },
        { role: 'user', content: 'When do unused vacation days expire?' },
      ],
    })) as unknown as Json;
    expect(kept.choices[0].message.content).toContain('March');
    const session = (await (
      await s.request('GET', `/api/chat/get-chat-session/${kept.chat_session_id}`, { key: alice })
    ).json()) as Json;
    expect(session.messages.map((m: Json) => [m.message_type, m.message.slice(0, 5)])).toEqual([
      ['system', ''],
      ['user', 'Hello'],
      ['assistant', 'Hi, h'],
      ['user', 'When '],
      ['assistant', expect.any(String)],
    ]);
    const unsaved = (await client(alice).chat.completions.create({
      model: 'kas',
      store: false,
      messages: [{ role: 'user', content: 'How many vacation days do employees get?' }],
    })) as unknown as Json;
    expect(unsaved.chat_session_id).toBeUndefined();
    expect(unsaved.choices[0].message.content).toContain('25 vacation days');
    await expect
      .poll(
        async () =>
          (
            (await (
              await s.request('GET', '/api/chat/get-user-chat-sessions', { key: alice })
            ).json()) as Json
          ).sessions.length,
      )
      .toBe(before.sessions.length + 1);
  });

  it('answers errors in OpenAI shape with kas statuses', async () => {
    await expect(client('svck-not-a-real-key-000000000000000000000').models.list()).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const unknown = await client(alice)
      .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    const hidden = await client(limited)
      .chat.completions.create({
        model: `agent-${privateAgent}`,
        messages: [{ role: 'user', content: 'hi' }],
      })
      .catch((e: unknown) => e);
    expect(hidden).toBeInstanceOf(OpenAI.NotFoundError);
    const res = await s.request('POST', '/v1/chat/completions', {
      key: alice,
      body: { model: 'kas', messages: [{ role: 'system', content: 'no question' }] },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        message: expect.any(String),
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_input',
      },
    });
    const none = await s.request('GET', '/v1/nothing', { key: alice });
    expect(none.status).toBe(404);
    expect(((await none.json()) as Json).error.type).toBe('not_found_error');
  });
});

describe('OpenAI-compatible API with a model provider', () => {
  let fake: FakeLlmServer;
  let s: TestServer;

  beforeAll(async () => {
    fake = await startFakeOpenAi();
    s = await startTestServer({
      env: {
        KAS_LLM_PROVIDER: 'openai',
        KAS_LLM_BASE_URL: fake.baseURL,
        KAS_LLM_API_KEY: 'test-key',
        KAS_LLM_MODEL: 'fake-model',
        KAS_CORS_ORIGINS: 'https://chat.example',
      },
    });
  });

  it('lets the browser origins of KAS_CORS_ORIGINS call /v1', async () => {
    const preflight = await s.request('OPTIONS', '/v1/chat/completions', {
      headers: {
        origin: 'https://chat.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://chat.example');
    const other = await s.request('GET', '/v1/models', {
      key: s.adminKey,
      headers: { origin: 'https://evil.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
  afterAll(async () => {
    await s?.close();
    await fake?.close();
  });

  it('passes temperature and max_tokens to the model, the conversation and system messages in the prompt', async () => {
    fake.enqueue({ tokens: ['Fine.'] });
    const before = fake.requests.length;
    const completion = await new OpenAI({
      apiKey: s.adminKey,
      baseURL: `${s.url}/v1`,
      maxRetries: 0,
    }).chat.completions.create({
      model: 'kas',
      temperature: 0.3,
      max_tokens: 77,
      messages: [
        { role: 'system', content: 'Reply in pirate speak.' },
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: 'Ahoy Ada.' },
        { role: 'user', content: 'What is my name?' },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('Fine.');
    const sent = fake.requests[before]!;
    expect(sent).toMatchObject({ temperature: 0.3, max_tokens: 77 });
    const prompt = JSON.stringify(sent.messages);
    expect(prompt).toContain('Reply in pirate speak.');
    expect(prompt).toContain('My name is Ada.');
    expect(prompt).toContain('Ahoy Ada.');
    expect(sent.messages.at(-1).content).toContain('What is my name?');
  });

  it('ends a stream that fails after its first byte with an SSE error event, then [DONE]', async () => {
    fake.enqueue({ tokens: ['Partial', ' answer', ' never'], failAfter: 2 });
    const res = await s.request('POST', '/v1/chat/completions', {
      key: s.adminKey,
      body: { model: 'kas', stream: true, messages: [{ role: 'user', content: 'Break midway' }] },
    });
    expect(res.status).toBe(200);
    const events = await sseEvents(res);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const failure = JSON.parse(events.at(-2)!.data);
    expect(failure.error).toMatchObject({ type: 'server_error', code: 'llm_provider_error' });
    const text = events
      .slice(0, -2)
      .map((e) => JSON.parse(e.data).choices[0].delta.content ?? '')
      .join('');
    expect(text).toBe('Partial answer');
  });

  it('raises the failure through the openai client as an APIError', async () => {
    fake.enqueue({ tokens: ['Partial', ' answer', ' never'], failAfter: 2 });
    const stream = await new OpenAI({
      apiKey: s.adminKey,
      baseURL: `${s.url}/v1`,
      maxRetries: 0,
    }).chat.completions.create({
      model: 'kas',
      stream: true,
      messages: [{ role: 'user', content: 'Break midway' }],
    });
    const read = async () => {
      for await (const _ of stream);
    };
    await expect(read()).rejects.toBeInstanceOf(OpenAI.APIError);
  });
});
