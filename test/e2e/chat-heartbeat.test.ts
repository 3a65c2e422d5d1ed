import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../fakes/openai.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { answerOf, readAll, typesOf } from './chat-helpers.ts';

const HEARTBEAT = {
  placement: { turn_index: 0, tab_index: 0, sub_turn_index: null },
  obj: { type: 'chat_heartbeat' },
};

describe('chat stream heartbeat', () => {
  let fake: FakeLlmServer;
  let s: TestServer;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeOpenAi();
    s = await startTestServer({
      env: {
        ...fakeOpenAiEnv(fake),
        // 15 s in production; shortened so that a slow model leaves quiet gaps.
        KAS_CHAT_HEARTBEAT_MS: '50',
      },
    });
    key = (await s.createKey('basic')).key;
  });
  afterAll(async () => {
    await s?.close();
    await fake?.close();
  });

  it('sends a chat_heartbeat line while the model is quiet, and only then', async () => {
    fake.enqueue({ tokens: ['slow', ' and', ' steady'], delayMs: 300 });
    const res = await s.request('POST', '/api/chat/send-chat-message', {
      key,
      body: { message: 'Take your time', chat_session_info: {} },
    });
    expect(res.status).toBe(200);
    const lines = await readAll(res);
    expect(answerOf(lines)).toBe('slow and steady');
    expect(lines.at(-1)).toMatchObject({ obj: { type: 'stop', stop_reason: null } });
    const beats = lines.filter((l) => l.obj?.type === 'chat_heartbeat');
    for (const beat of beats) expect(beat).toEqual(HEARTBEAT);
    // Each 300 ms gap between tokens holds a few heartbeats: at least two, and no burst.
    const types = typesOf(lines);
    const deltas = types.flatMap((t, i) => (t === 'message_delta' ? [i] : []));
    expect(deltas).toHaveLength(3);
    for (const [from, to] of [[deltas[0]!, deltas[1]!] as const, [deltas[1]!, deltas[2]!] as const]) {
      const between = types.slice(from + 1, to);
      expect(between.length).toBeGreaterThanOrEqual(2);
      expect(between.length).toBeLessThanOrEqual(8);
      expect(new Set(between)).toEqual(new Set(['chat_heartbeat']));
    }
    // Heartbeats are not part of the answer that is stored.
    const session = await (
      await s.request('GET', `/api/chat/get-chat-session/${lines[0]!.chat_session_id}`, { key })
    ).json();
    expect(session.messages.at(-1).message).toBe('slow and steady');
  });
});
