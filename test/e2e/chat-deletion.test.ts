import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { readAll } from './chat-helpers.ts';

/** The instance's deletion policy (KAS_HARD_DELETE_CHATS) and the explicit `hard_delete` that overrides it. */
describe.each([
  ['default (soft)', {}, false],
  ['KAS_HARD_DELETE_CHATS=true', { KAS_HARD_DELETE_CHATS: 'true' }, true],
] as const)('chat deletion with %s', (_label, env, hardByDefault) => {
  let s: TestServer;
  let key: string;

  beforeAll(async () => {
    s = await startTestServer({ env });
    key = (await s.createKey('basic', 'deleter')).key;
  });
  afterAll(async () => {
    await s?.close();
  });

  /** A session with one exchange (built-in answerer), so there are messages to remove. */
  const sessionWithMessages = async () => {
    const lines = await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key,
        body: { message: 'Anything about deletion?', chat_session_info: { description: 'to delete' } },
      }),
    );
    const id = lines[0]!.chat_session_id as string;
    expect(Number(await messageCount(id))).toBe(3);
    return id;
  };
  const messageCount = async (sessionId: string) =>
    (
      await s.running.runtime.deps.db
        .selectFrom('chat_messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('chat_session_id', '=', sessionId)
        .executeTakeFirstOrThrow()
    ).n;
  const getDeleted = (id: string) =>
    s.request('GET', `/api/chat/get-chat-session/${id}?include_deleted=true`, { key });
  const del = (id: string, query = '') =>
    s.request('DELETE', `/api/chat/delete-chat-session/${id}${query}`, { key });

  const expectSoftDeleted = async (id: string) => {
    expect((await s.request('GET', `/api/chat/get-chat-session/${id}`, { key })).status).toBe(404);
    const kept = await getDeleted(id);
    expect(kept.status).toBe(200);
    const body = await kept.json();
    expect(body).toMatchObject({ chat_session_id: id, deleted: true });
    expect(body.messages).toHaveLength(3);
    expect(Number(await messageCount(id))).toBe(3);
  };
  const expectGone = async (id: string) => {
    const res = await getDeleted(id);
    expect([res.status, await res.json()]).toEqual([
      404,
      { error_code: 'SESSION_NOT_FOUND', detail: expect.any(String) },
    ]);
    expect(Number(await messageCount(id))).toBe(0);
  };

  it(`without hard_delete ${hardByDefault ? 'removes the session for good' : 'soft-deletes'}`, async () => {
    const id = await sessionWithMessages();
    const res = await del(id);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    if (hardByDefault) await expectGone(id);
    else await expectSoftDeleted(id);
    const list = await (await s.request('GET', '/api/chat/get-user-chat-sessions', { key })).json();
    expect(list.sessions.map((x: { id: string }) => x.id)).not.toContain(id);
  });

  it('soft-deletes with hard_delete=false, whatever the policy', async () => {
    const id = await sessionWithMessages();
    expect((await del(id, '?hard_delete=false')).status).toBe(204);
    await expectSoftDeleted(id);
    // A soft-deleted session can still be removed for good.
    expect((await del(id, '?hard_delete=true')).status).toBe(204);
    await expectGone(id);
  });

  it('removes the session and its messages with hard_delete=true, whatever the policy', async () => {
    const id = await sessionWithMessages();
    expect((await del(id, '?hard_delete=true')).status).toBe(204);
    await expectGone(id);
    expect((await del(id)).status).toBe(404);
  });
});
