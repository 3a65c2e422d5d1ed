import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../fakes/openai.ts';
import { serve, stop, stopAllProcesses, tempDir } from '../harness/process.ts';

const KEY = `svck-${'s'.repeat(43)}`;
let fake: FakeLlmServer;
beforeAll(async () => {
  fake = await startFakeOpenAi();
});
afterAll(async () => {
  stopAllProcesses();
  await fake?.close();
});

describe('graceful shutdown', () => {
  it('SIGTERM ends a stream with a stop packet, keeps its partial answer, exits 0 and frees the data directory', async () => {
    const dataDir = tempDir();
    const env = {
      KAS_DATA_DIR: dataDir,
      KAS_BOOTSTRAP_ADMIN_KEY: KEY,
      KAS_SHUTDOWN_GRACE_S: '5',
      ...fakeOpenAiEnv(fake),
    };
    const first = await serve(env, 20_000);
    fake.enqueue({ tokens: Array.from({ length: 200 }, (_, i) => `word${i} `), delayMs: 50 });
    const res = await fetch(`${first.url}/api/chat/send-chat-message`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Tell me a long story', chat_session_info: {} }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    let exit: Promise<number | null> | undefined;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      if (!exit && text.includes('word3')) exit = stop(first.child);
    }
    expect(await exit).toBe(0);
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { obj?: { type: string }; chat_session_id?: string });
    // Cut by the shutdown, which is not its user stopping it.
    expect(lines.at(-1)?.obj).toEqual({ type: 'stop', stop_reason: 'shutdown' });
    const sessionId = lines.find((l) => l.chat_session_id)?.chat_session_id;
    expect(text).not.toContain('word199');

    // The same data directory opens again at once, and the partial answer was saved.
    const second = await serve(env, 20_000);
    const session = (await (
      await fetch(`${second.url}/api/chat/get-chat-session/${sessionId}`, {
        headers: { authorization: `Bearer ${KEY}` },
      })
    ).json()) as { messages: { message_type: string; message: string }[] };
    const answer = session.messages.find((m) => m.message_type === 'assistant')?.message ?? '';
    expect(answer).toContain('word0');
    expect(answer).not.toContain('word199');
    expect(answer).toMatch(/Generation was cut short: the server was shutting down\.$/);
    expect(answer).not.toMatch(/stopped by the user/);
    expect(await stop(second.child)).toBe(0);
  }, 60_000);

  it('lets an answer being streamed finish within KAS_SHUTDOWN_GRACE_S', async () => {
    const env = {
      KAS_DATA_DIR: tempDir(),
      KAS_BOOTSTRAP_ADMIN_KEY: KEY,
      KAS_SHUTDOWN_GRACE_S: '30',
      ...fakeOpenAiEnv(fake),
    };
    const server = await serve(env, 20_000);
    fake.enqueue({ tokens: Array.from({ length: 60 }, (_, i) => `word${i} `), delayMs: 50 });
    const res = await fetch(`${server.url}/api/chat/send-chat-message`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Tell me a story', chat_session_info: {} }),
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    let exit: Promise<number | null> | undefined;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      if (!exit && text.includes('word3')) exit = stop(server.child);
    }
    expect(await exit).toBe(0);
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { obj?: { type: string } });
    expect(text).toContain('word59');
    expect(lines.at(-1)?.obj).toEqual({ type: 'stop', stop_reason: null });
  }, 60_000);
});
