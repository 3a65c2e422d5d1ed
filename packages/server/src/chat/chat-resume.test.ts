import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import type { ChatStreamLine } from './chat.schemas.ts';
import { errorOf, streamAll } from './chat.test-helpers.ts';

async function resumed(
  caller: {
    chat: {
      resumeStream(input: { session_id: string; cursor?: number }): Promise<AsyncIterable<ChatStreamLine>>;
    };
  },
  input: { session_id: string; cursor?: number },
): Promise<ChatStreamLine[]> {
  const lines: ChatStreamLine[] = [];
  for await (const line of await caller.chat.resumeStream(input)) lines.push(line);
  return lines;
}

describe('resuming a chat stream', () => {
  const t = useTestRuntime();
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    alice = (await t.createKey('basic', 'alice')).key;
    bob = (await t.createKey('basic', 'bob')).key;
    await t.caller(t.adminKey).documents.ingest({
      document: {
        id: 'kb-vacation',
        semantic_identifier: 'Vacation policy',
        source: 'file',
        sections: [{ text: 'Employees receive 25 vacation days per year.', link: 'https://kb.example/v' }],
      },
    });
  });

  it('replays the kept lines from any cursor, only to the owner', async () => {
    const lines = await streamAll(t.caller(alice), {
      message: 'How many vacation days do employees get?',
      chat_session_info: { persona_id: 0 },
    });
    const sessionId = (lines[0] as { chat_session_id: string }).chat_session_id;
    expect(await resumed(t.caller(alice), { session_id: sessionId, cursor: 0 })).toEqual(lines);
    expect(await resumed(t.caller(alice), { session_id: sessionId, cursor: 3 })).toEqual(lines.slice(3));
    expect(await resumed(t.caller(alice), { session_id: sessionId, cursor: lines.length })).toEqual([]);
    expect(await errorOf(resumed(t.caller(bob), { session_id: sessionId }))).toMatchObject({
      status: 404,
      error_code: 'SESSION_NOT_FOUND',
    });
    const detail = await t.caller(alice).chat.getSession({ session_id: sessionId });
    expect(detail.run_in_progress).toBe(false);
  });

  it('answers 404 when the session has no streamed answer', async () => {
    const { chat_session_id } = await t.caller(alice).chat.createSession({ persona_id: 0 });
    expect(await errorOf(resumed(t.caller(alice), { session_id: chat_session_id }))).toMatchObject({
      status: 404,
      error_code: 'NOT_FOUND',
    });
  });
});

describe('a stream larger than KAS_STREAM_BUFFER_MAX_KB', () => {
  const t = useTestRuntime({ KAS_STREAM_BUFFER_MAX_KB: '1' });

  it('is not kept: resuming it answers 404 (the saved message is the answer)', async () => {
    const key = (await t.createKey('basic', 'carol')).key;
    const lines = await streamAll(t.caller(key), {
      message: `Tell me about ${'vacation '.repeat(200)}`,
      chat_session_info: { persona_id: 0 },
    });
    expect(JSON.stringify(lines).length).toBeGreaterThan(1024);
    const sessionId = (lines[0] as { chat_session_id: string }).chat_session_id;
    await expect
      .poll(async () => (await errorOf(resumed(t.caller(key), { session_id: sessionId }))).status)
      .toBe(404);
  });
});

describe('resuming a live answer in the process running it', () => {
  let llm: FakeLlmServer;
  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    await llm?.close();
  });
  // A poll far longer than the answer: a resume that polled the table would wait it out.
  const t = useTestRuntime(() => ({ ...fakeOpenAiEnv(llm), KAS_STREAM_BUFFER_POLL_MS: '10000' }));

  it('follows the run as it writes, without polling; the cut stream and the resumed one make the whole', async () => {
    const key = (await t.createKey('basic', 'dana')).key;
    llm.enqueue({
      reasoning: ['Counting ', 'slowly.'],
      tokens: Array.from({ length: 12 }, (_, i) => `word${i} `),
      delayMs: 40,
    });
    const cut: ChatStreamLine[] = [];
    for await (const line of await t.caller(key).chat.sendMessageStream({
      message: 'Count for me',
      chat_session_info: { persona_id: 0 },
    })) {
      cut.push(line);
      if (cut.length === 4) break;
    }
    const sessionId = (cut[0] as { chat_session_id: string }).chat_session_id;
    const started = performance.now();
    const rest = await resumed(t.caller(key), { session_id: sessionId, cursor: cut.length });
    const elapsed = performance.now() - started;
    expect(rest.at(-1)).toMatchObject({ obj: { type: 'stop', stop_reason: null } });
    expect(rest.some((l) => 'obj' in l && l.obj.type === 'message_delta')).toBe(true);
    expect(elapsed).toBeLessThan(5000);
    // Once ended, the kept lines (read from the table) are the same lines.
    await expect
      .poll(async () => (await resumed(t.caller(key), { session_id: sessionId, cursor: 0 })).length)
      .toBe(cut.length + rest.length);
    expect(await resumed(t.caller(key), { session_id: sessionId, cursor: 0 })).toEqual([...cut, ...rest]);
  });
});
