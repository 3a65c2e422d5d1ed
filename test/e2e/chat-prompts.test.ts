import { countTokens } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../fakes/openai.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { answerOf, readAll } from './chat-helpers.ts';

type Message = { role: string; content: string };

const BASE_OPENING = 'You are an expert assistant who is truthful';

/** The date line the server writes for `now`, in UTC (only the date part: the minute may turn). */
function dateOf(now: Date): string {
  return now.toLocaleDateString('en-US', {
    weekday: 'long',
    year: 'numeric',
    month: 'long',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

async function withFakeServer(env: Record<string, string> = {}) {
  const fake = await startFakeOpenAi();
  const s = await startTestServer({
    env: {
      ...fakeOpenAiEnv(fake),
      ...env,
    },
  });
  return { fake, s };
}

describe('chat prompt composition (what the OpenAI-compatible model receives)', () => {
  let fake: FakeLlmServer;
  let s: TestServer;
  let key: string;

  beforeAll(async () => {
    ({ fake, s } = await withFakeServer());
    key = (await s.createKey('basic', 'prompter')).key;
  });
  afterAll(async () => {
    await s?.close();
    await fake?.close();
  });

  const send = (body: Record<string, unknown>) =>
    s.request('POST', '/api/chat/send-chat-message', { key, body });
  /** Sends one message answered with `answer`; returns the stream lines and the messages the model got. */
  const turn = async (body: Record<string, unknown>, answer = 'ok') => {
    fake.fallback = () => ({ tokens: [answer] });
    const before = fake.requests.length;
    const res = await send(body);
    if (res.status !== 200) expect(await res.text()).toBe('a 200 stream');
    const lines = await readAll(res);
    expect(answerOf(lines)).toBe(answer);
    expect(fake.requests.length).toBe(before + 1);
    const ids = lines.find((l) => 'reserved_assistant_message_id' in l)!;
    return {
      lines,
      userMessageId: ids.user_message_id as number | null,
      assistantMessageId: ids.reserved_assistant_message_id as number,
      messages: fake.requests.at(-1)!.messages as Message[],
    };
  };
  const createAgent = async (fields: Record<string, unknown>) => {
    const res = await s.request('POST', '/api/persona', {
      key: s.adminKey,
      body: {
        name: `agent ${Math.random().toString(36).slice(2, 8)}`,
        description: 'prompt test',
        system_prompt: '',
        task_prompt: '',
        datetime_aware: false,
        is_public: true,
        document_set_ids: [],
        tool_ids: [],
        ...fields,
      },
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { id: number }).id;
  };

  it('uses the base system prompt with the current date for the default agent', async () => {
    const before = new Date();
    const { messages } = await turn({ message: 'Plain question one', chat_session_info: {} });
    const after = new Date();
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0]!.content.startsWith(BASE_OPENING)).toBe(true);
    expect(messages[0]!.content).toMatch(/The current date and time is .+ \d\d:\d\d UTC\./);
    expect([dateOf(before), dateOf(after)].some((d) => messages[0]!.content.includes(d))).toBe(true);
    expect(messages[1]).toEqual({ role: 'user', content: 'Plain question one' });
  });

  it('prepends an agent’s system_prompt to the base prompt and appends its task_prompt', async () => {
    const agent = await createAgent({
      system_prompt: 'AGENT-PROMPT-ALPHA: you are a pirate.',
      task_prompt: 'TASK-PROMPT-BETA: answer in one line.',
      datetime_aware: false,
    });
    const { messages } = await turn({
      message: 'Ahoy question',
      chat_session_info: { persona_id: agent },
    });
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    const system = messages[0]!.content;
    expect(system.startsWith(`AGENT-PROMPT-ALPHA: you are a pirate.\n\n${BASE_OPENING}`)).toBe(true);
    expect(system.endsWith('\n\nTASK-PROMPT-BETA: answer in one line.')).toBe(true);
    expect(system).not.toContain('current date');
    expect(JSON.stringify(messages.slice(1))).not.toMatch(/AGENT-PROMPT-ALPHA|TASK-PROMPT-BETA/);
    expect(messages[1]!.content).toBe('Ahoy question');
  });

  it('lets an agent replace the base prompt entirely, still dating it when datetime_aware', async () => {
    const agent = await createAgent({
      system_prompt: 'ONLY-AGENT-PROMPT',
      replace_base_system_prompt: true,
      task_prompt: 'TASK-AFTER',
      datetime_aware: true,
    });
    const before = new Date();
    const { messages } = await turn({
      message: 'Replace question',
      chat_session_info: { persona_id: agent },
    });
    const after = new Date();
    const system = messages[0]!.content;
    expect(system.startsWith('ONLY-AGENT-PROMPT\n\nThe current date and time is ')).toBe(true);
    expect([dateOf(before), dateOf(after)].some((d) => system.includes(d))).toBe(true);
    expect(system.endsWith('\n\nTASK-AFTER')).toBe(true);
    expect(system).not.toContain(BASE_OPENING);

    const placeholder = await createAgent({
      system_prompt: 'Today is {{CURRENT_DATETIME}} for sure.',
      replace_base_system_prompt: true,
      datetime_aware: true,
    });
    const dated = await turn({ message: 'When?', chat_session_info: { persona_id: placeholder } });
    expect(dated.messages[0]!.content).toMatch(/^Today is \w+day, .+ UTC for sure\.$/);
  });

  it('joins a project’s instructions to the prompt of its sessions only', async () => {
    const created = await s.request('POST', '/api/user/projects', {
      key,
      body: { name: 'Prompted', instructions: 'PROJECT-INSTRUCTIONS-GAMMA: answer in French.' },
    });
    expect(created.status).toBe(200);
    const project = (await created.json()) as { id: number };
    const inProject = await turn({
      message: 'Project question',
      chat_session_info: { project_id: project.id },
    });
    expect(inProject.messages[0]!.content).toContain(
      '# Project instructions\nPROJECT-INSTRUCTIONS-GAMMA: answer in French.',
    );
    const session = await s.request('POST', '/api/chat/create-chat-session', {
      key,
      body: { project_id: project.id },
    });
    const sessionId = ((await session.json()) as { chat_session_id: string }).chat_session_id;
    const viaSession = await turn({ message: 'Second project question', chat_session_id: sessionId });
    expect(viaSession.messages[0]!.content).toContain('PROJECT-INSTRUCTIONS-GAMMA');
    const outside = await turn({ message: 'Loose question', chat_session_info: {} });
    expect(JSON.stringify(outside.messages)).not.toContain('PROJECT-INSTRUCTIONS-GAMMA');
  });

  it('sends the history along the message tree: branches and regenerations', async () => {
    const first = await turn({ message: 'Q1 apples', chat_session_info: {} }, 'A1 apples answer');
    const sessionId = first.lines[0]!.chat_session_id as string;
    const a1 = first.assistantMessageId;
    const second = await turn({ message: 'Q2 bananas', chat_session_id: sessionId }, 'A2 bananas answer');
    expect(second.messages.slice(1)).toEqual([
      { role: 'user', content: 'Q1 apples' },
      { role: 'assistant', content: 'A1 apples answer' },
      { role: 'user', content: 'Q2 bananas' },
    ]);

    // A branch after the first answer leaves the second exchange out.
    const branch = await turn(
      { message: 'Q3 cherries', chat_session_id: sessionId, parent_message_id: a1 },
      'A3 cherries answer',
    );
    expect(branch.messages.slice(1)).toEqual([
      { role: 'user', content: 'Q1 apples' },
      { role: 'assistant', content: 'A1 apples answer' },
      { role: 'user', content: 'Q3 cherries' },
    ]);

    // The default parent (-1) follows the newest branch.
    const next = await turn({ message: 'Q4 dates', chat_session_id: sessionId }, 'A4');
    expect(next.messages.slice(1).map((m) => m.content)).toEqual([
      'Q1 apples',
      'A1 apples answer',
      'Q3 cherries',
      'A3 cherries answer',
      'Q4 dates',
    ]);

    // Regenerating from the root has no history at all.
    const fresh = await turn({
      message: 'Q5 from scratch',
      chat_session_id: sessionId,
      parent_message_id: null,
    });
    expect(fresh.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(fresh.messages[1]!.content).toBe('Q5 from scratch');

    // Regenerating the answer to the branch's question: its history, and the question itself once.
    const q3 = branch.userMessageId;
    const again = await turn({ message: '', chat_session_id: sessionId, parent_message_id: q3 }, 'A3 again');
    expect(again.userMessageId).toBeNull();
    expect(again.messages.slice(1).map((m) => m.content)).toEqual([
      'Q1 apples',
      'A1 apples answer',
      'Q3 cherries',
    ]);
  });

  it('follows the branch chosen with PUT /api/chat/set-message-as-latest', async () => {
    const first = await turn({ message: 'B1 question', chat_session_info: {} }, 'B1 answer');
    const sessionId = first.lines[0]!.chat_session_id as string;
    const second = await turn({ message: 'B2 question', chat_session_id: sessionId }, 'B2 answer');
    await turn(
      { message: 'B3 question', chat_session_id: sessionId, parent_message_id: first.assistantMessageId },
      'B3 answer',
    );
    const put = (messageId: number, k = key) =>
      s.request('PUT', '/api/chat/set-message-as-latest', { key: k, body: { message_id: messageId } });
    const res = await put(second.userMessageId!);
    expect([res.status, await res.text()]).toEqual([204, '']);
    const next = await turn({ message: 'B4 question', chat_session_id: sessionId });
    expect(next.messages.slice(1).map((m) => m.content)).toEqual([
      'B1 question',
      'B1 answer',
      'B2 question',
      'B2 answer',
      'B4 question',
    ]);

    const stranger = (await s.createKey('basic', 'stranger')).key;
    const forbidden = await put(second.userMessageId!, stranger);
    expect([forbidden.status, (await forbidden.json()).error_code]).toEqual([
      403,
      'INSUFFICIENT_PERMISSIONS',
    ]);
    const unknown = await put(2_000_000_000);
    expect([unknown.status, await unknown.json()]).toEqual([
      404,
      { error_code: 'MESSAGE_NOT_FOUND', detail: expect.any(String) },
    ]);
    const invalid = await s.request('PUT', '/api/chat/set-message-as-latest', { key, body: {} });
    expect([invalid.status, (await invalid.json()).error_code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(
      (await s.request('PUT', '/api/chat/set-message-as-latest', { body: { message_id: 1 } })).status,
    ).toBe(401);
  });

  it('gives additional_context to the model without storing it', async () => {
    const { lines, messages } = await turn({
      message: 'Use the context',
      chat_session_info: {},
      additional_context: 'EXTRA-CONTEXT-DELTA-77',
    });
    const withContext = messages.filter((m) => m.content.includes('EXTRA-CONTEXT-DELTA-77'));
    expect(withContext).toHaveLength(1);
    expect(withContext[0]!.role).toBe('user');
    expect(messages.at(-1)!.content).toBe('Use the context');
    const sessionId = lines[0]!.chat_session_id as string;
    const stored = await s.request('GET', `/api/chat/get-chat-session/${sessionId}`, { key });
    expect(stored.status).toBe(200);
    const text = await stored.text();
    expect(text).toContain('Use the context');
    expect(text).not.toContain('EXTRA-CONTEXT-DELTA-77');
    // A later turn of the same session does not see it either.
    const later = await turn({ message: 'And now?', chat_session_id: sessionId });
    expect(JSON.stringify(later.messages)).not.toContain('EXTRA-CONTEXT-DELTA-77');
  });

  it('puts the text of an attached file next to the question', async () => {
    const form = new FormData();
    form.append('files', new Blob(['Door code: KUMQUAT-31.'], { type: 'text/plain' }), 'door.txt');
    const up = await fetch(`${s.url}/api/chat/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(up.status).toBe(200);
    const { files } = (await up.json()) as { files: unknown[] };
    const { messages } = await turn({
      message: 'What is the door code?',
      chat_session_info: {},
      file_descriptors: files,
    });
    expect(messages.at(-1)).toEqual({
      role: 'user',
      content: 'What is the door code?\n\n--- Attached file: door.txt ---\nDoor code: KUMQUAT-31.',
    });
  });
});

describe('chat context window budget', () => {
  let fake: FakeLlmServer;
  let s: TestServer;
  let key: string;

  beforeAll(async () => {
    ({ fake, s } = await withFakeServer({ KAS_LLM_CONTEXT_TOKENS: '600' }));
    key = (await s.createKey('basic', 'budgeted')).key;
  });
  afterAll(async () => {
    await s?.close();
    await fake?.close();
  });

  const filler = (tag: string) => `${tag} ${'lorem ipsum dolor sit amet '.repeat(8)}`.trim();

  it('trims the oldest turns first and always sends the current question in full', async () => {
    let sessionId: string | undefined;
    for (let i = 1; i <= 6; i++) {
      fake.enqueue({ tokens: [filler(`ANSWER-${i}`)] });
      const res = await s.request('POST', '/api/chat/send-chat-message', {
        key,
        body: {
          message: filler(`QUESTION-${i}`),
          ...(sessionId ? { chat_session_id: sessionId } : { chat_session_info: {} }),
        },
      });
      const lines = await readAll(res);
      sessionId ??= lines[0]!.chat_session_id as string;
    }
    // Each earlier message costs about 45 tokens: all twelve (~550) cannot fit next to the system prompt.
    const question = filler('CURRENT-QUESTION');
    fake.enqueue({ tokens: ['fine'] });
    await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key,
        body: { message: question, chat_session_id: sessionId },
      }),
    );
    const messages = fake.requests.at(-1)!.messages as Message[];
    expect(messages[0]!.role).toBe('system');
    expect(messages.at(-1)).toEqual({ role: 'user', content: question });
    const history = messages.slice(1, -1);
    const tags = history.map((m) => m.content.split(' ')[0]);
    // Some history is kept, not all of it, and what is kept is the newest part, in order.
    expect(history.length).toBeGreaterThanOrEqual(2);
    expect(history.length).toBeLessThan(12);
    const all = Array.from({ length: 6 }, (_, i) => [`QUESTION-${i + 1}`, `ANSWER-${i + 1}`]).flat();
    expect(tags).toEqual(all.slice(all.length - history.length));
    expect(history[0]!.role).toBe('user');
    // The prompt stays within the window less the quarter kept for the answer.
    const used = messages.reduce((n, m) => n + countTokens(m.content) + 4, 0);
    expect(used).toBeLessThanOrEqual(450);
  });

  it('sends a question larger than the whole window, alone and uncut', async () => {
    const huge = `HUGE-START ${'word '.repeat(900)}HUGE-END`;
    fake.enqueue({ tokens: ['first'] });
    const first = await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key,
        body: { message: 'short opener', chat_session_info: {} },
      }),
    );
    fake.enqueue({ tokens: ['fine'] });
    await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key,
        body: { message: huge, chat_session_id: first[0]!.chat_session_id },
      }),
    );
    const messages = fake.requests.at(-1)!.messages as Message[];
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[1]!.content).toBe(huge);
  });
});
