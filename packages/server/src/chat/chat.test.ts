import { beforeAll, describe, expect, it } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { answerOf, errorOf, objs, streamAll } from './chat.test-helpers.ts';

const t = useTestRuntime();
let user: { key: string; user_id: string };
let other: { key: string; user_id: string };

beforeAll(async () => {
  user = await t.createKey('basic', 'alice');
  other = await t.createKey('basic', 'bob');
  const admin = t.caller(t.adminKey);
  await admin.documents.ingest({
    document: {
      id: 'kb-vacation',
      semantic_identifier: 'Vacation policy',
      source: 'file',
      sections: [
        {
          text:
            'Employees receive 25 vacation days per year. Unused vacation days expire at the end of March. ' +
            'The office kitchen is cleaned on Fridays.',
          link: 'https://kb.example/vacation',
        },
      ],
    },
  });
  await admin.documents.ingest({
    document: {
      id: 'kb-expenses',
      semantic_identifier: 'Expense rules',
      source: 'file',
      sections: [
        {
          text: 'Travel expenses are reimbursed within 14 days. Receipts must be uploaded to the expense portal.',
          link: 'https://kb.example/expenses',
        },
      ],
    },
  });
});

describe('send-chat-message with the built-in answerer', () => {
  it('streams the DESIGN.md line order and answers from the index with citations', async () => {
    const lines = await streamAll(t.caller(user.key), {
      message: 'How many vacation days do employees get?',
      chat_session_info: { persona_id: 0 },
    });
    expect(lines[0]).toEqual({ chat_session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(lines[1]).toEqual({
      user_message_id: expect.any(Number),
      reserved_assistant_message_id: expect.any(Number),
    });
    const types = objs(lines).map((o) => o.type);
    expect(types.slice(0, 4)).toEqual([
      'search_tool_start',
      'search_tool_queries_delta',
      'search_tool_documents_delta',
      'section_end',
    ]);
    expect(types[4]).toBe('message_start');
    expect(types.at(-1)).toBe('stop');
    expect(lines.at(-1)).toMatchObject({ obj: { type: 'stop', stop_reason: null } });
    const answer = answerOf(lines);
    expect(answer).toContain('Employees receive 25 vacation days per year.');
    expect(answer).toContain('[[1]](https://kb.example/vacation)');
    expect(answer).not.toContain('kitchen');
    const citations = objs(lines).filter((o) => o.type === 'citation_info');
    expect(citations).toEqual([{ type: 'citation_info', citation_number: 1, document_id: 'kb-vacation' }]);
    for (const line of lines.slice(2)) {
      expect(line).toMatchObject({ placement: { turn_index: expect.any(Number), tab_index: 0 } });
    }

    const sessionId = (lines[0] as { chat_session_id: string }).chat_session_id;
    const session = await t.caller(user.key).chat.getSession({ session_id: sessionId });
    expect(session.messages.map((m) => m.message_type)).toEqual(['system', 'user', 'assistant']);
    // The root, made with the first turn, links to its question.
    expect(session.messages[0]!.latest_child_message).toBe(session.messages[1]!.message_id);
    const assistant = session.messages[2]!;
    expect(assistant.message).toBe(answer);
    expect(assistant.citations).toEqual({ '1': 'kb-vacation' });
    expect(assistant.context_docs.map((d) => d.document_id)).toContain('kb-vacation');
    expect(assistant.message_id).toBe(
      (lines[1] as { reserved_assistant_message_id: number }).reserved_assistant_message_id,
    );
  });

  it('says plainly when nothing relevant is indexed, deterministically', async () => {
    const ask = () =>
      streamAll(t.caller(user.key), {
        message: 'What is the airspeed of an unladen swallow?',
        chat_session_info: {},
      });
    const a = answerOf(await ask());
    expect(a).toMatch(/could not find anything relevant/);
    expect(answerOf(await ask())).toBe(a);
  });

  it('include_citations: false removes markers and citation packets', async () => {
    const lines = await streamAll(t.caller(user.key), {
      message: 'When are travel expenses reimbursed?',
      chat_session_info: {},
      include_citations: false,
    });
    const answer = answerOf(lines);
    expect(answer).toContain('Travel expenses are reimbursed within 14 days.');
    expect(answer).not.toMatch(/\[\d+\]/);
    expect(objs(lines).some((o) => o.type === 'citation_info')).toBe(false);
    const id = (lines[0] as { chat_session_id: string }).chat_session_id;
    const session = await t.caller(user.key).chat.getSession({ session_id: id });
    expect(session.messages[2]!.citations).toEqual({});
  });

  it('returns a ChatFullResponse when stream is false', async () => {
    const res = await t.caller(user.key).chat.sendMessage({
      message: 'How many vacation days do employees get?',
      chat_session_info: {},
      stream: false,
    });
    expect(res.answer).toContain('[[1]](https://kb.example/vacation)');
    expect(res.answer_citationless).toContain('Employees receive 25 vacation days per year.');
    expect(res.answer_citationless).not.toContain('[[');
    expect(res.citations).toEqual({ '1': 'kb-vacation' });
    expect(res.context_docs.top_documents[0]!.document_id).toBe('kb-vacation');
    expect(res.chat_message_id).toBe(res.message_id);
  });

  it('rejects both chat_session_id and chat_session_info with 400', async () => {
    const { chat_session_id } = await t.caller(user.key).chat.createSession({});
    const error = await errorOf(
      streamAll(t.caller(user.key), { message: 'hi', chat_session_id, chat_session_info: {} }),
    );
    expect(error).toMatchObject({ error_code: 'BAD_REQUEST', status: 400 });
  });

  it("refuses another user's session (403) and unknown sessions (404)", async () => {
    const { chat_session_id } = await t.caller(user.key).chat.createSession({});
    expect(await errorOf(streamAll(t.caller(other.key), { message: 'hi', chat_session_id }))).toMatchObject({
      error_code: 'INSUFFICIENT_PERMISSIONS',
    });
    expect(
      await errorOf(
        streamAll(t.caller(user.key), {
          message: 'hi',
          chat_session_id: '00000000-0000-4000-8000-000000000000',
        }),
      ),
    ).toMatchObject({ error_code: 'SESSION_NOT_FOUND', status: 404 });
  });

  it('validates llm_override.temperature (422) and the provider name (400)', async () => {
    const tooHot = await errorOf(
      streamAll(t.caller(user.key), {
        message: 'hi',
        chat_session_info: {},
        llm_override: { temperature: 2.5 },
      }),
    );
    expect(tooHot).toMatchObject({ status: 422, error_code: 'VALIDATION_ERROR' });
    const cold = await errorOf(
      t
        .caller(user.key)
        .chat.sendMessage({ message: 'hi', chat_session_info: {}, llm_override: { temperature: -1 } }),
    );
    expect(cold).toMatchObject({ status: 422, error_code: 'VALIDATION_ERROR' });
    expect(
      await errorOf(
        streamAll(t.caller(user.key), {
          message: 'hi',
          chat_session_info: {},
          llm_override: { model_provider: 'nope' },
        }),
      ),
    ).toMatchObject({ error_code: 'INVALID_INPUT', status: 400 });
  });
});

describe('the message tree', () => {
  it('appends with -1, branches at an id, regenerates from a user message and from the root', async () => {
    const c = t.caller(user.key);
    const { chat_session_id } = await c.chat.createSession({ description: 'tree' });
    const first = await streamAll(c, { message: 'How many vacation days?', chat_session_id });
    const ids1 = first[0] as { user_message_id: number; reserved_assistant_message_id: number };
    const second = await streamAll(c, { message: 'And travel expenses?', chat_session_id });
    const ids2 = second[0] as { user_message_id: number; reserved_assistant_message_id: number };
    let session = await c.chat.getSession({ session_id: chat_session_id });
    const byId = new Map(session.messages.map((m) => [m.message_id, m]));
    expect(byId.get(ids2.user_message_id)!.parent_message).toBe(ids1.reserved_assistant_message_id);
    expect(session.messages).toHaveLength(5);

    const regen = await streamAll(c, {
      message: '',
      chat_session_id,
      parent_message_id: ids2.user_message_id,
    });
    const ids3 = regen[0] as { user_message_id: number | null; reserved_assistant_message_id: number };
    expect(ids3.user_message_id).toBeNull();
    session = await c.chat.getSession({ session_id: chat_session_id });
    expect(
      session.messages.find((m) => m.message_id === ids3.reserved_assistant_message_id)!.parent_message,
    ).toBe(ids2.user_message_id);
    expect(session.messages.find((m) => m.message_id === ids2.user_message_id)!.latest_child_message).toBe(
      ids3.reserved_assistant_message_id,
    );

    const branch = await streamAll(c, {
      message: 'What about kitchens?',
      chat_session_id,
      parent_message_id: ids1.reserved_assistant_message_id,
    });
    const ids4 = branch[0] as { user_message_id: number };
    session = await c.chat.getSession({ session_id: chat_session_id });
    expect(session.messages.find((m) => m.message_id === ids4.user_message_id)!.parent_message).toBe(
      ids1.reserved_assistant_message_id,
    );

    const fresh = await streamAll(c, { message: 'Start over', chat_session_id, parent_message_id: null });
    const ids5 = fresh[0] as { user_message_id: number };
    session = await c.chat.getSession({ session_id: chat_session_id });
    const root = session.messages.find((m) => m.message_type === 'system')!;
    expect(session.messages.find((m) => m.message_id === ids5.user_message_id)!.parent_message).toBe(
      root.message_id,
    );
    // The session's one root, now leading to the new question.
    expect(session.messages.filter((m) => m.message_type === 'system')).toHaveLength(1);
    expect(root.latest_child_message).toBe(ids5.user_message_id);

    expect(
      await errorOf(streamAll(c, { message: 'x', chat_session_id, parent_message_id: 999_999 })),
    ).toMatchObject({ error_code: 'INVALID_INPUT' });
  });

  it('switches branches with set-message-as-latest: -1 then continues the chosen branch', async () => {
    const c = t.caller(user.key);
    type Ids = { user_message_id: number; reserved_assistant_message_id: number };
    const { chat_session_id } = await c.chat.createSession({ description: 'branches' });
    const a = (await streamAll(c, { message: 'How many vacation days?', chat_session_id }))[0] as Ids;
    const b = (await streamAll(c, { message: 'And travel expenses?', chat_session_id }))[0] as Ids;
    const branch = (
      await streamAll(c, {
        message: 'When do vacation days expire?',
        chat_session_id,
        parent_message_id: a.reserved_assistant_message_id,
      })
    )[0] as Ids;
    const latestOf = async (id: number) =>
      (await c.chat.getSession({ session_id: chat_session_id })).messages.find((m) => m.message_id === id)!
        .latest_child_message;
    expect(await latestOf(a.reserved_assistant_message_id)).toBe(branch.user_message_id);

    await c.chat.setMessageAsLatest({ message_id: b.user_message_id });
    expect(await latestOf(a.reserved_assistant_message_id)).toBe(b.user_message_id);
    const next = (await streamAll(c, { message: 'Thanks', chat_session_id }))[0] as Ids;
    const session = await c.chat.getSession({ session_id: chat_session_id });
    expect(session.messages.find((m) => m.message_id === next.user_message_id)!.parent_message).toBe(
      b.reserved_assistant_message_id,
    );
    // The other branch is still there, untouched.
    expect(session.messages.some((m) => m.message_id === branch.reserved_assistant_message_id)).toBe(true);

    // Setting the root (no parent) changes nothing.
    const root = session.messages.find((m) => m.message_type === 'system')!;
    await c.chat.setMessageAsLatest({ message_id: root.message_id });
    expect(await latestOf(a.reserved_assistant_message_id)).toBe(b.user_message_id);

    expect(
      await errorOf(t.caller(other.key).chat.setMessageAsLatest({ message_id: branch.user_message_id })),
    ).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS', status: 403 });
    expect(await latestOf(a.reserved_assistant_message_id)).toBe(b.user_message_id);
    expect(await errorOf(c.chat.setMessageAsLatest({ message_id: 2_000_000_000 }))).toMatchObject({
      error_code: 'MESSAGE_NOT_FOUND',
      status: 404,
    });
    expect(await errorOf(c.chat.setMessageAsLatest({ message_id: 0 }))).toMatchObject({
      status: 422,
      error_code: 'VALIDATION_ERROR',
    });
    await c.chat.deleteSession({ session_id: chat_session_id, hard_delete: false });
    expect(await errorOf(c.chat.setMessageAsLatest({ message_id: branch.user_message_id }))).toMatchObject({
      error_code: 'SESSION_NOT_FOUND',
      status: 404,
    });
  });

  it('keeps generating and saves the answer when the reader goes away', async () => {
    const c = t.caller(user.key);
    const stream = await c.chat.sendMessageStream({
      message: 'How many vacation days?',
      chat_session_info: {},
    });
    let sessionId = '';
    for await (const line of stream) {
      if ('chat_session_id' in line) {
        sessionId = line.chat_session_id;
        break;
      }
    }
    let message = '';
    for (let i = 0; i < 100 && !message.includes('vacation days'); i++) {
      await new Promise((r) => setTimeout(r, 20));
      const session = await c.chat.getSession({ session_id: sessionId });
      message = session.messages.find((m) => m.message_type === 'assistant')?.message ?? '';
    }
    expect(message).toContain('Employees receive 25 vacation days per year.');
  });
});
