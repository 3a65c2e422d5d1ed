import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { answerOf, readAll, typesOf } from './chat-helpers.ts';

describe('REST: chat with the built-in answerer', () => {
  let s: TestServer;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    s = await startTestServer();
    alice = (await s.createKey('basic', 'alice')).key;
    bob = (await s.createKey('basic', 'bob')).key;
    for (const [id, title, text] of [
      [
        'kb-hr',
        'Vacation policy',
        'Employees receive 25 vacation days per year. Unused vacation days expire in March.',
      ],
      [
        'kb-it',
        'Laptop policy',
        'Laptops are replaced every three years. Lost laptops must be reported to IT within one day.',
      ],
    ] as const) {
      const res = await s.request('POST', '/api/svc-api/ingestion', {
        key: s.adminKey,
        body: {
          document: {
            id,
            semantic_identifier: title,
            sections: [{ text, link: `https://kb.example/${id}` }],
          },
        },
      });
      expect(res.status).toBe(200);
    }
  });
  afterAll(async () => {
    await s?.close();
  });

  const send = (key: string, body: Record<string, unknown>) =>
    s.request('POST', '/api/chat/send-chat-message', { key, body });
  const newSession = async (key: string, body: Record<string, unknown> = {}) => {
    const res = await s.request('POST', '/api/chat/create-chat-session', { key, body });
    expect(res.status).toBe(200);
    return ((await res.json()) as { chat_session_id: string }).chat_session_id;
  };

  it('streams NDJSON as text/event-stream and answers with cited sentences', async () => {
    const sessionId = await newSession(alice, { description: 'hr questions' });
    const res = await send(alice, {
      message: 'How many vacation days do employees receive?',
      chat_session_id: sessionId,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const lines = await readAll(res);
    expect(Object.keys(lines[0]!)).toEqual(['user_message_id', 'reserved_assistant_message_id']);
    expect(typesOf(lines)).toEqual([
      'search_tool_start',
      'search_tool_queries_delta',
      'search_tool_documents_delta',
      'section_end',
      'message_start',
      ...typesOf(lines).slice(5, -1),
      'stop',
    ]);
    expect(answerOf(lines)).toContain(
      'Employees receive 25 vacation days per year. [[1]](https://kb.example/kb-hr)',
    );
    const session = await (
      await s.request('GET', `/api/chat/get-chat-session/${sessionId}`, { key: alice })
    ).json();
    expect(session).toMatchObject({
      chat_session_id: sessionId,
      description: 'hr questions',
      persona_id: 0,
      persona_name: expect.any(String),
      shared_status: 'private',
    });
    expect(session.messages.at(-1).citations).toEqual({ '1': 'kb-hr' });
  });

  it('answers stream:false with one ChatFullResponse', async () => {
    const res = await send(alice, {
      message: 'When are laptops replaced?',
      chat_session_info: {},
      stream: false,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await res.json();
    expect(body).toMatchObject({
      answer: expect.stringContaining('Laptops are replaced every three years.'),
      chat_message_id: expect.any(Number),
      citations: { '1': 'kb-it' },
      context_docs: { top_documents: expect.any(Array) },
    });
  });

  it('gives ordinary HTTP errors before the stream starts', async () => {
    const sessionId = await newSession(alice);
    const cases: Array<[string | undefined, unknown, number, string]> = [
      [undefined, { message: 'hi', chat_session_info: {} }, 401, 'UNAUTHENTICATED'],
      [alice, { message: 'hi', chat_session_id: sessionId, chat_session_info: {} }, 400, 'BAD_REQUEST'],
      [alice, { chat_session_info: {} }, 422, 'VALIDATION_ERROR'],
      [
        alice,
        { message: 'hi', chat_session_info: {}, llm_override: { temperature: 2.1 } },
        422,
        'VALIDATION_ERROR',
      ],
      [alice, { message: 'hi', chat_session_id: 'not-a-uuid' }, 422, 'VALIDATION_ERROR'],
      [
        alice,
        { message: 'hi', chat_session_id: '00000000-0000-4000-8000-000000000000' },
        404,
        'SESSION_NOT_FOUND',
      ],
      [bob, { message: 'hi', chat_session_id: sessionId }, 403, 'INSUFFICIENT_PERMISSIONS'],
      [alice, { message: 'hi', chat_session_info: { persona_id: 424242 } }, 404, 'PERSONA_NOT_FOUND'],
      [
        alice,
        { message: 'hi', chat_session_info: {}, file_descriptors: [{ id: 'nope' }] },
        404,
        'FILE_NOT_FOUND',
      ],
    ];
    for (const [key, body, status, code] of cases) {
      const res = await send(key as string, body as Record<string, unknown>);
      expect([res.status, await res.json()]).toEqual([
        status,
        { error_code: code, detail: expect.any(String) },
      ]);
    }
    const malformed = await s.request('POST', '/api/chat/send-chat-message', {
      key: alice,
      rawBody: '{"message":',
    });
    expect(malformed.status).toBe(422);
    expect(
      (await s.request('POST', '/api/chat/send-message', { key: alice, body: { message: 'x' } })).status,
    ).toBe(404);
  });

  it('enforces agent access: an agent the caller cannot see answers 404 like an absent one', async () => {
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
    const { id } = await created.json();
    for (const res of [
      await s.request('POST', '/api/chat/create-chat-session', { key: alice, body: { persona_id: id } }),
      await send(alice, { message: 'hi', chat_session_info: { persona_id: id } }),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({
        error_code: 'PERSONA_NOT_FOUND',
        detail: `Agent (persona) ${id} not found`,
      });
    }
    expect(
      (
        await s.request('POST', '/api/chat/create-chat-session', {
          key: s.adminKey,
          body: { persona_id: id },
        })
      ).status,
    ).toBe(200);
  });

  it('refuses a document set the caller cannot see exactly as an absent one', async () => {
    const set = await s.request('POST', '/api/manage/admin/document-set', {
      key: s.adminKey,
      body: { name: 'secret-set', is_public: false },
    });
    expect(set.status).toBe(200);
    // Both refused in the same words: the answer does not tell a private set from an absent one.
    const details = [];
    for (const name of ['secret-set', 'no-such-set']) {
      const res = await s.request('POST', '/api/chat/send-chat-message', {
        key: alice,
        body: {
          message: 'vacation',
          chat_session_info: {},
          stream: false,
          internal_search_filters: { document_set: [name] },
        },
      });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error_code).toBe('INVALID_INPUT');
      details.push(body.detail.replace(name, 'X'));
    }
    expect(details[0]).toBe(details[1]);
  });

  it('shares a session so that it can be read without a key, and only then', async () => {
    const sessionId = await newSession(alice);
    await readAll(await send(alice, { message: 'Laptop replacement?', chat_session_id: sessionId }));
    const path = `/api/chat/get-chat-session/${sessionId}`;
    expect((await s.request('GET', path)).status).toBe(401);
    expect((await s.request('GET', `${path}?is_shared=true`)).status).toBe(403);
    expect((await s.request('GET', `${path}?is_shared=true`, { key: alice })).status).toBe(403);
    expect((await s.request('GET', path, { key: bob })).status).toBe(403);

    const shared = await s.request('PATCH', `/api/chat/chat-session/${sessionId}`, {
      key: alice,
      body: { sharing_status: 'public' },
    });
    expect(shared.status).toBe(200);
    expect(
      (
        await s.request('PATCH', `/api/chat/chat-session/${sessionId}`, {
          key: bob,
          body: { sharing_status: 'private' },
        })
      ).status,
    ).toBe(403);
    const anonymous = await s.request('GET', `${path}?is_shared=true`);
    expect(anonymous.status).toBe(200);
    expect((await anonymous.json()).shared_status).toBe('public');
    expect((await s.request('GET', `${path}?is_shared=true`, { key: bob })).status).toBe(200);
    expect((await s.request('GET', path, { key: bob })).status).toBe(403);
    expect((await s.request('GET', `${path}?is_shared=true`, { key: 'svck-invalid' })).status).toBe(401);
  });

  it('soft-deletes (readable with include_deleted) and hard-deletes', async () => {
    const soft = await newSession(alice);
    const del = await s.request('DELETE', `/api/chat/delete-chat-session/${soft}`, { key: alice });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await s.request('GET', `/api/chat/get-chat-session/${soft}`, { key: alice })).status).toBe(404);
    const kept = await s.request('GET', `/api/chat/get-chat-session/${soft}?include_deleted=true`, {
      key: alice,
    });
    expect(kept.status).toBe(200);
    expect((await kept.json()).deleted).toBe(true);
    expect(
      (await s.request('GET', `/api/chat/get-chat-session/${soft}?include_deleted=true`, { key: bob }))
        .status,
    ).toBe(403);

    const hard = await newSession(alice);
    expect((await s.request('DELETE', `/api/chat/delete-chat-session/${hard}`, { key: bob })).status).toBe(
      403,
    );
    expect(
      (await s.request('DELETE', `/api/chat/delete-chat-session/${hard}?hard_delete=true`, { key: alice }))
        .status,
    ).toBe(204);
    expect(
      (await s.request('GET', `/api/chat/get-chat-session/${hard}?include_deleted=true`, { key: alice }))
        .status,
    ).toBe(404);
    expect((await s.request('DELETE', `/api/chat/delete-chat-session/${hard}`, { key: alice })).status).toBe(
      404,
    );
  });

  it('lists sessions newest first with a before cursor and validates its parameters', async () => {
    const carol = (await s.createKey('basic', 'carol')).key;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await newSession(carol, { description: `s${i}` }));
    const first = await (
      await s.request('GET', '/api/chat/get-user-chat-sessions?page_size=2', { key: carol })
    ).json();
    expect(first.sessions.map((x: { name: string }) => x.name)).toEqual(['s2', 's1']);
    expect(first.has_more).toBe(true);
    const before = encodeURIComponent(first.sessions[1].time_created);
    const second = await (
      await s.request('GET', `/api/chat/get-user-chat-sessions?page_size=2&before=${before}`, { key: carol })
    ).json();
    expect(second).toMatchObject({ sessions: [{ name: 's0', id: ids[0] }], has_more: false });
    for (const query of ['page_size=0', 'page_size=101', 'before=yesterday', 'before=2024-13-01T00:00:00Z']) {
      const res = await s.request('GET', `/api/chat/get-user-chat-sessions?${query}`, { key: carol });
      expect([query, res.status]).toEqual([query, 422]);
    }
    expect((await s.request('GET', '/api/chat/get-user-chat-sessions')).status).toBe(401);
  });

  it('keeps project chats apart and checks project ownership', async () => {
    const dave = (await s.createKey('basic', 'dave')).key;
    const created = await s.request('POST', '/api/user/projects', {
      key: dave,
      body: { name: 'Launch', instructions: 'Answer in French.' },
    });
    expect(created.status).toBe(200);
    const project = await created.json();
    expect(project).toMatchObject({ name: 'Launch', instructions: 'Answer in French.', chat_count: 0 });
    await newSession(dave, { description: 'loose' });
    await newSession(dave, { description: 'in project', project_id: project.id });
    const list = async (q: string) =>
      (
        await (await s.request('GET', `/api/chat/get-user-chat-sessions${q}`, { key: dave })).json()
      ).sessions.map((x: { name: string }) => x.name);
    expect(await list('')).toEqual(['loose']);
    expect(await list(`?project_id=${project.id}`)).toEqual(['in project']);
    expect(await list('?only_non_project_chats=false')).toEqual(['in project', 'loose']);
    const forbidden = await s.request('POST', '/api/chat/create-chat-session', {
      key: alice,
      body: { project_id: project.id },
    });
    // Another user's project answers exactly as an absent one, so ids reveal nothing.
    expect(forbidden.status).toBe(404);
    const absent = await s.request('POST', '/api/chat/create-chat-session', {
      key: alice,
      body: { project_id: 999_999 },
    });
    expect(await forbidden.json()).toEqual({
      ...((await absent.json()) as object),
      detail: `Project ${project.id} not found`,
    });
    expect(
      (await s.request('PATCH', `/api/user/projects/${project.id}`, { key: alice, body: { name: 'x' } }))
        .status,
    ).toBe(404);
    const renamed = await s.request('PATCH', `/api/user/projects/${project.id}`, {
      key: dave,
      body: { name: 'Launch 2' },
    });
    expect((await renamed.json()).name).toBe('Launch 2');
    const projects = await (await s.request('GET', '/api/user/projects', { key: dave })).json();
    expect(projects).toMatchObject([{ id: project.id, chat_count: 1 }]);
    expect((await s.request('GET', '/api/user/projects', { key: alice })).status).toBe(200);
    expect(await (await s.request('GET', '/api/user/projects', { key: alice })).json()).toEqual([]);
    expect((await s.request('DELETE', `/api/user/projects/${project.id}`, { key: dave })).status).toBe(204);
    expect(await list('')).toEqual(['in project', 'loose']);
  });

  it('searches the caller’s chat history by name and message text, grouped by age', async () => {
    const erin = (await s.createKey('basic', 'erin')).key;
    await readAll(
      await send(erin, {
        message: 'Tell me about laptops please',
        chat_session_info: { description: 'gear' },
      }),
    );
    await newSession(erin, { description: 'Quarterly planning' });
    const byMessage = await (await s.request('GET', '/api/chat/search?query=laptops', { key: erin })).json();
    expect(byMessage).toEqual({
      groups: [{ title: 'Today', chats: [expect.objectContaining({ name: 'gear' })] }],
      has_more: false,
      next_page: null,
    });
    const byName = await (await s.request('GET', '/api/chat/search?query=planning', { key: erin })).json();
    expect(byName.groups[0].chats.map((c: { name: string }) => c.name)).toEqual(['Quarterly planning']);
    const recent = await (await s.request('GET', '/api/chat/search?page_size=1', { key: erin })).json();
    expect(recent).toMatchObject({ has_more: true, next_page: 2 });
    expect(recent.groups[0].chats[0].name).toBe('Quarterly planning');
    const page2 = await (await s.request('GET', '/api/chat/search?page_size=1&page=2', { key: erin })).json();
    expect(page2).toMatchObject({ has_more: false, next_page: null });
    const others = await (await s.request('GET', '/api/chat/search?query=laptops', { key: bob })).json();
    expect(others.groups).toEqual([]);
    expect((await s.request('GET', '/api/chat/search?page=0', { key: erin })).status).toBe(422);
  });

  it('renames and stops sessions with owner checks', async () => {
    const sessionId = await newSession(alice);
    const renamed = await s.request('PUT', '/api/chat/rename-chat-session', {
      key: alice,
      body: { chat_session_id: sessionId, name: 'Renamed' },
    });
    expect(await renamed.json()).toEqual({ new_name: 'Renamed' });
    const stop = await s.request('POST', `/api/chat/stop-chat-session/${sessionId}`, { key: alice });
    expect([stop.status, await stop.json()]).toEqual([200, { message: 'Chat session stopped' }]);
    expect((await s.request('POST', `/api/chat/stop-chat-session/${sessionId}`, { key: bob })).status).toBe(
      403,
    );
    expect(
      (
        await s.request('POST', '/api/chat/stop-chat-session/00000000-0000-4000-8000-000000000000', {
          key: alice,
        })
      ).status,
    ).toBe(404);
  });

  it('runs deep research: a plan, a search per sub-question and a combined cited answer', async () => {
    const lines = await readAll(
      await send(alice, {
        message: 'How many vacation days do employees get and when are laptops replaced?',
        chat_session_info: {},
        deep_research: true,
      }),
    );
    const types = typesOf(lines);
    expect(types[0]).toBe('reasoning_start');
    expect(types.filter((t) => t === 'search_tool_start').length).toBeGreaterThanOrEqual(2);
    const reasoning = lines
      .filter((l) => l.obj?.type === 'reasoning_delta')
      .map((l) => l.obj.reasoning)
      .join('');
    expect(reasoning).toContain('Plan:');
    const answer = answerOf(lines);
    expect(answer).toContain('25 vacation days');
    expect(answer).toContain('replaced every three years');
    expect(lines.filter((l) => l.obj?.type === 'citation_info').length).toBe(2);
    expect(types.at(-1)).toBe('stop');
  });

  it('uploads text files (401 without a key, 415 for unreadable types)', async () => {
    const form = () => {
      const f = new FormData();
      f.append(
        'files',
        new Blob(['The cafeteria opens at 7 am on weekdays.'], { type: 'text/plain' }),
        'cafe.txt',
      );
      return f;
    };
    expect((await fetch(`${s.url}/api/chat/file`, { method: 'POST', body: form() })).status).toBe(401);
    const bad = new FormData();
    bad.append('files', new Blob([new Uint8Array([0, 1, 2])], { type: 'image/png' }), 'x.png');
    const rejected = await fetch(`${s.url}/api/chat/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}` },
      body: bad,
    });
    expect([rejected.status, (await rejected.json()).error_code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const up = await fetch(`${s.url}/api/chat/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}` },
      body: form(),
    });
    const { files } = await up.json();
    const lines = await readAll(
      await send(alice, {
        message: 'When does the cafeteria open?',
        chat_session_info: {},
        file_descriptors: files,
      }),
    );
    expect(answerOf(lines)).toContain('The cafeteria opens at 7 am on weekdays.');
    const other = await send(bob, { message: 'x', chat_session_info: {}, file_descriptors: files });
    expect(other.status).toBe(404);
  });

  it('returns 429 with Retry-After when a token budget is used up', async () => {
    const frank = await s.createKey('basic', 'frank');
    expect(
      (
        await s.request('POST', '/api/admin/token-rate-limits/users', {
          key: frank.key,
          body: { token_budget: 1, period_hours: 1 },
        })
      ).status,
    ).toBe(403);
    const created = await s.request('POST', '/api/admin/token-rate-limits/users', {
      key: s.adminKey,
      body: { enabled: true, token_budget: 1, period_hours: 1 },
    });
    expect(created.status).toBe(200);
    const budget = await created.json();
    expect(budget).toMatchObject({ scope: 'user', token_budget: 1, period_hours: 1, enabled: true });
    const long = 'vacation '.repeat(1200);
    expect((await send(frank.key, { message: long, chat_session_info: {}, stream: false })).status).toBe(200);
    const limited = await send(frank.key, { message: 'again', chat_session_info: {} });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect(await limited.json()).toEqual({
      error_code: 'RATE_LIMITED',
      detail: expect.stringContaining('Token budget'),
    });
    const disabled = await s.request('PUT', `/api/admin/token-rate-limits/rate-limit/${budget.token_id}`, {
      key: s.adminKey,
      body: { enabled: false, token_budget: 1, period_hours: 1 },
    });
    expect(disabled.status).toBe(200);
    expect((await send(frank.key, { message: 'again', chat_session_info: {}, stream: false })).status).toBe(
      200,
    );
    expect(
      (
        await s.request('DELETE', `/api/admin/token-rate-limits/rate-limit/${budget.token_id}`, {
          key: s.adminKey,
        })
      ).status,
    ).toBe(204);
    expect((await s.request('GET', '/api/admin/token-rate-limits/users', { key: s.adminKey })).status).toBe(
      200,
    );
  });
});
