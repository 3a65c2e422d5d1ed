/**
 * Per-resource isolation over HTTP: for each resource a user owns, a second user of the same role can
 * neither read, list, change, share, stop nor delete it (403 or 404, as the spec allows), and the
 * owner's resource is unchanged afterwards.
 */
import { identityService, usersService } from '@kas/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const REFUSED = [403, 404];

describe.each(['pglite', 'postgres'] as const)('isolation between two users of the same role on %s', (db) => {
  let s: TestServer;
  let owner: string;
  let other: string;

  beforeAll(async () => {
    s = await startTestServer({ db });
    owner = (await s.createKey('basic', 'owner')).key;
    other = (await s.createKey('basic', 'other')).key;
  });
  afterAll(async () => {
    await s?.close();
  });

  async function call(key: string, method: string, path: string, body?: unknown) {
    const res = await s.request(method, path, { key, body });
    const text = await res.text();
    return { status: res.status, text, json: text ? (JSON.parse(text) as any) : undefined };
  }

  async function refused(key: string, method: string, path: string, body?: unknown) {
    const answer = await call(key, method, path, body);
    expect(REFUSED, `${method} ${path}: ${answer.status} ${answer.text}`).toContain(answer.status);
    expect(Object.keys(answer.json).sort()).toEqual(['detail', 'error_code']);
    return answer;
  }

  it('chat sessions and their messages', async () => {
    const created = await call(owner, 'POST', '/api/chat/create-chat-session', { description: 'owner chat' });
    expect(created.status).toBe(200);
    const id = created.json.chat_session_id as string;
    const sent = await call(owner, 'POST', '/api/chat/send-chat-message', {
      chat_session_id: id,
      message: 'quokkaphrase private question',
      stream: false,
    });
    expect(sent.status, sent.text).toBe(200);
    const messageId = sent.json.message_id as number;
    const before = await call(owner, 'GET', `/api/chat/get-chat-session/${id}`);
    expect(before.status).toBe(200);

    await refused(other, 'GET', `/api/chat/get-chat-session/${id}`);
    await refused(other, 'GET', `/api/chat/get-chat-session/${id}?is_shared=true`);
    const list = await call(other, 'GET', '/api/chat/get-user-chat-sessions');
    expect(list.text).not.toContain(id);
    const search = await call(other, 'GET', '/api/chat/search?query=quokkaphrase');
    expect(search.status).toBe(200);
    expect(search.text).not.toContain(id);
    await refused(other, 'PATCH', `/api/chat/chat-session/${id}`, { sharing_status: 'public' });
    await refused(other, 'PUT', '/api/chat/rename-chat-session', { chat_session_id: id, name: 'hijacked' });
    await refused(other, 'PUT', '/api/chat/set-message-as-latest', { message_id: messageId });
    await refused(other, 'POST', `/api/chat/stop-chat-session/${id}`);
    await refused(other, 'POST', '/api/chat/send-chat-message', {
      chat_session_id: id,
      message: 'injected',
      stream: false,
    });
    await refused(other, 'POST', '/api/chat/send-chat-message', {
      chat_session_id: id,
      parent_message_id: messageId,
      message: 'injected as a reply',
    });
    await refused(other, 'DELETE', `/api/chat/delete-chat-session/${id}`);

    const after = await call(owner, 'GET', `/api/chat/get-chat-session/${id}`);
    expect(after.json).toEqual(before.json);
    // Still private: nobody reads it without a key either.
    expect((await s.request('GET', `/api/chat/get-chat-session/${id}?is_shared=true`)).status).not.toBe(200);
  });

  it('agents', async () => {
    const created = await call(owner, 'POST', '/api/persona', {
      name: 'owner private agent',
      description: 'mine',
      system_prompt: 'You are mine.',
      task_prompt: '',
      datetime_aware: false,
      is_public: false,
      document_set_ids: [],
      tool_ids: [],
    });
    expect(created.status, created.text).toBe(200);
    const id = created.json.id as number;
    const before = await call(owner, 'GET', `/api/persona/${id}`);
    expect(before.status).toBe(200);

    await refused(other, 'GET', `/api/persona/${id}`);
    const list = await call(other, 'GET', '/api/agents?page_size=1000');
    expect(list.json.items.map((a: { id: number }) => a.id)).not.toContain(id);
    await refused(other, 'PATCH', `/api/persona/${id}`, { name: 'hijacked' });
    await refused(other, 'PATCH', `/api/persona/${id}/public`, { is_public: true });
    await refused(other, 'POST', '/api/chat/create-chat-session', { persona_id: id });
    await refused(other, 'POST', '/api/chat/send-chat-message', {
      chat_session_info: { persona_id: id },
      message: 'use their agent',
      stream: false,
    });
    await refused(other, 'DELETE', `/api/persona/${id}`);

    expect((await call(owner, 'GET', `/api/persona/${id}`)).json).toEqual(before.json);
  });

  it('projects', async () => {
    const created = await call(owner, 'POST', '/api/user/projects', { name: 'owner project' });
    expect(created.status, created.text).toBe(200);
    const id = created.json.id as number;
    const session = await call(owner, 'POST', '/api/chat/create-chat-session', { project_id: id });
    expect(session.status).toBe(200);

    const list = await call(other, 'GET', '/api/user/projects');
    expect(list.json.map((p: { id: number }) => p.id)).not.toContain(id);
    await refused(other, 'PATCH', `/api/user/projects/${id}`, { name: 'hijacked' });
    await refused(other, 'POST', '/api/chat/create-chat-session', { project_id: id });
    const sessions = await call(other, 'GET', `/api/chat/get-user-chat-sessions?project_id=${id}`);
    if (sessions.status === 200) expect(sessions.text).not.toContain(session.json.chat_session_id);
    else expect(REFUSED).toContain(sessions.status);
    await refused(other, 'DELETE', `/api/user/projects/${id}`);

    const mine = await call(owner, 'GET', '/api/user/projects');
    expect(mine.json).toContainEqual(expect.objectContaining({ id, name: 'owner project' }));
  });

  it('uploaded files', async () => {
    const form = new FormData();
    form.append('files', new Blob(['the wombat ledger is secret'], { type: 'text/plain' }), 'ledger.txt');
    const upload = await fetch(`${s.url}/api/chat/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner}` },
      body: form,
    });
    expect(upload.status).toBe(200);
    const file = ((await upload.json()) as { files: { id: string }[] }).files[0]!;

    const session = await call(other, 'POST', '/api/chat/create-chat-session', {});
    await refused(other, 'POST', '/api/chat/send-chat-message', {
      chat_session_id: session.json.chat_session_id,
      message: 'what does the attached file say?',
      file_descriptors: [{ id: file.id, type: 'plain_text' }],
      stream: false,
    });
    const own = await call(owner, 'POST', '/api/chat/send-chat-message', {
      chat_session_info: {},
      message: 'what does the attached file say?',
      file_descriptors: [{ id: file.id, type: 'plain_text' }],
      stream: false,
    });
    expect(own.status, own.text).toBe(200);
  });

  it('personal access tokens', async () => {
    // Personal tokens belong to people (API keys get none): two people with a first token each, as an
    // admin gives them from the command line.
    const personWithToken = async (email: string) => {
      const ctx = s.running.runtime.deps;
      const user = await usersService.createPerson({ ctx, email, role: 'basic' });
      return (await identityService.createPersonalToken({ ctx, userId: user.id, input: { name: 'first' } }))
        .token!;
    };
    const owner = await personWithToken(`owner-${db}@corp.example`);
    const other = await personWithToken(`other-${db}@corp.example`);
    const created = await call(owner, 'POST', '/api/user/pats', { name: 'owner token' });
    expect(created.status, created.text).toBe(200);
    const { id, token } = created.json as { id: number; token: string };

    const list = await call(other, 'GET', '/api/user/pats');
    expect(list.json.map((t: { id: number }) => t.id)).not.toContain(id);
    await refused(other, 'DELETE', `/api/user/pats/${id}`);

    expect((await call(owner, 'GET', '/api/user/pats')).json.map((t: { id: number }) => t.id)).toContain(id);
    expect((await call(token, 'GET', '/api/me')).status).toBe(200);
  });
});
