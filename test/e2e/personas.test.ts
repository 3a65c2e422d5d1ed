import { ApiError, createKasClient, type KasTrpcClient } from '@kas/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

type Result = { status: number; body: any };
type Query = Record<string, string | number | boolean>;

/** The agent operations a new user tries, over one transport; errors come back as status + body. */
interface Transport {
  create(key: string, body: Record<string, unknown>): Promise<Result>;
  update(key: string, id: number, body: Record<string, unknown>): Promise<Result>;
  get(key: string, id: number): Promise<Result>;
  list(key: string, query?: Query): Promise<Result>;
  adminList(key: string, query?: Query): Promise<Result>;
  remove(key: string, id: number): Promise<Result>;
}

function restTransport(s: TestServer): Transport {
  const call = async (method: string, path: string, key: string, body?: unknown): Promise<Result> => {
    const res = await s.request(method, path, { key, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const qs = (query: Query = {}) =>
    `?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString()}`;
  return {
    create: (key, body) => call('POST', '/api/persona', key, body),
    update: (key, id, body) => call('PATCH', `/api/persona/${id}`, key, body),
    get: (key, id) => call('GET', `/api/persona/${id}`, key),
    list: (key, query) => call('GET', `/api/agents${qs(query)}`, key),
    adminList: (key, query) => call('GET', `/api/admin/agents${qs(query)}`, key),
    remove: (key, id) => call('DELETE', `/api/persona/${id}`, key),
  };
}

function trpcTransport(s: TestServer): Transport {
  const clients = new Map<string, ReturnType<typeof createKasClient>>();
  const run = async (key: string, fn: (trpc: KasTrpcClient) => Promise<unknown>): Promise<Result> => {
    let client = clients.get(key);
    if (!client) {
      client = createKasClient({ baseUrl: s.url, apiKey: key });
      clients.set(key, client);
    }
    try {
      return { status: 200, body: await client.call(fn) };
    } catch (error) {
      if (error instanceof ApiError) {
        return { status: error.status, body: { error_code: error.error_code, detail: error.detail } };
      }
      throw error;
    }
  };
  return {
    create: (key, body) => run(key, (t) => t.personas.create.mutate(body as never)),
    update: (key, id, body) =>
      run(key, (t) => t.personas.update.mutate({ ...body, persona_id: id } as never)),
    get: (key, id) => run(key, (t) => t.personas.get.query({ persona_id: id })),
    list: (key, query = {}) => run(key, (t) => t.personas.list.query(query as never)),
    adminList: (key, query = {}) => run(key, (t) => t.personas.adminList.query(query as never)),
    remove: async (key, id) => {
      const result = await run(key, (t) => t.personas.delete.mutate({ persona_id: id }));
      return result.status === 200 ? { status: 204, body: undefined } : result;
    },
  };
}

function agentBody(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Support bot',
    description: 'Answers support questions',
    system_prompt: 'You are a support agent.',
    task_prompt: 'Cite the handbook.',
    datetime_aware: true,
    is_public: false,
    document_set_ids: [],
    tool_ids: [1],
    ...overrides,
  };
}

describe.each(['pglite', 'postgres'] as const)('agents over HTTP on %s', (db) => {
  let s: TestServer;
  let alice: { key: string; user_id: string };
  let bob: { key: string; user_id: string };
  beforeAll(async () => {
    s = await startTestServer({ db });
    alice = await s.createKey('basic', 'alice');
    bob = await s.createKey('basic', 'bob');
  });
  afterAll(async () => {
    await s?.close();
  });

  const json = async (res: Response) => ({ status: res.status, body: await res.json() });

  describe.each([
    ['REST', restTransport],
    ['tRPC', trpcTransport],
  ] as const)('visibility and permissions through %s', (_name, makeTransport) => {
    let api: Transport;
    beforeAll(() => {
      api = makeTransport(s);
    });

    async function ids(key: string, query: Query = {}) {
      const all: number[] = [];
      for (let page_num = 0; ; page_num++) {
        const page = await api.list(key, { ...query, page_num, page_size: 3 });
        expect(page.status).toBe(200);
        if (page.body.items.length === 0) return { all, total: page.body.total_items as number };
        all.push(...page.body.items.map((p: { id: number }) => p.id));
      }
    }

    it('holds every rule for an admin and two basic users', async () => {
      const zero = await api.get(bob.key, 0);
      expect(zero.status).toBe(200);
      expect(zero.body).toMatchObject({ id: 0, builtin_persona: true, search_start_date: null });

      const created = await api.create(
        alice.key,
        agentBody({
          search_start_date: '2025-01-01T00:00:00Z',
          starter_messages: [{ name: 'a', message: 'b' }],
        }),
      );
      expect(created.status).toBe(200);
      const id: number = created.body.id;
      expect(created.body).toMatchObject({
        name: 'Support bot',
        is_public: false,
        builtin_persona: false,
        system_prompt: 'You are a support agent.',
        tools: [expect.objectContaining({ id: 1, name: 'internal_search' })],
        document_sets: [],
      });

      // Private: only the owner and admins; to anyone else it answers like an absent agent.
      expect((await api.get(alice.key, id)).body.search_start_date).toBe('2025-01-01T00:00:00.000Z');
      expect((await api.get(s.adminKey, id)).status).toBe(200);
      const hidden = await api.get(bob.key, id);
      const absent = await api.get(bob.key, 999_999);
      expect(hidden).toMatchObject({ status: 404, body: { error_code: 'PERSONA_NOT_FOUND' } });
      expect(hidden.body.detail).toBe(absent.body.detail.replace('999999', String(id)));
      expect((await ids(bob.key)).all).not.toContain(id);
      expect((await ids(alice.key)).all).toContain(id);
      expect((await api.adminList(bob.key)).status).toBe(403);
      const adminPage = await api.adminList(s.adminKey, { page_size: 1000 });
      expect(adminPage.body.items.find((p: { id: number }) => p.id === id)).toMatchObject({
        users: [],
        groups: [],
        user_file_ids: [],
      });

      // Nobody but the owner (or an admin) edits or deletes; one who cannot see it is told it is absent.
      expect((await api.update(bob.key, id, { name: 'hijacked' })).status).toBe(404);
      expect((await api.remove(bob.key, id)).status).toBe(404);

      // Shared with Bob: he sees it, still cannot change it.
      const shared = await api.update(alice.key, id, { users: [bob.user_id], display_priority: 42 });
      expect(shared.status).toBe(200);
      expect(shared.body).toMatchObject({ users: [{ id: bob.user_id }], display_priority: null });
      expect((await api.get(bob.key, id)).status).toBe(200);
      expect((await ids(bob.key)).all).toContain(id);
      expect((await api.update(bob.key, id, { name: 'hijacked' })).status).toBe(403);
      expect((await ids(bob.key, { get_editable: true })).all).not.toContain(id);
      expect((await ids(alice.key, { get_editable: true })).all).toContain(id);

      // Shared through a group instead.
      const group = await json(
        await s.request('POST', '/api/manage/admin/user-group', {
          key: s.adminKey,
          body: { name: `group-${_name}-${id}`, user_ids: [bob.user_id] },
        }),
      );
      expect(group.status).toBe(200);
      expect((await api.update(alice.key, id, { users: [], groups: [group.body.id] })).status).toBe(200);
      expect((await api.get(bob.key, id)).status).toBe(200);
      expect((await api.update(alice.key, id, { groups: [] })).status).toBe(200);
      expect((await api.get(bob.key, id)).status).toBe(404);

      // Admins may edit anyone's agent.
      expect((await api.update(s.adminKey, id, { description: 'by admin' })).body.description).toBe(
        'by admin',
      );

      // Soft delete: gone from every list and from get, data kept for include_deleted.
      const before = await ids(alice.key);
      const removed = await api.remove(alice.key, id);
      expect(removed.status).toBe(204);
      expect(removed.body).toBeUndefined();
      for (const key of [alice.key, bob.key, s.adminKey]) {
        expect((await api.get(key, id)).status).toBe(404);
        expect((await ids(key)).all).not.toContain(id);
      }
      const after = await ids(alice.key);
      expect(after.total).toBe(before.total - 1);
      const withDeleted = await api.list(alice.key, { include_deleted: true, page_size: 1000 });
      const deletedCount = withDeleted.body.items.filter((p: { deleted: boolean }) => p.deleted).length;
      expect(deletedCount).toBeGreaterThan(0);
      expect(withDeleted.body.total_items).toBe(after.total + deletedCount);
      expect(withDeleted.body.items.find((p: { id: number }) => p.id === id)).toMatchObject({
        deleted: true,
        description: 'by admin',
        tools: [expect.objectContaining({ id: 1 })],
      });
      expect((await api.remove(alice.key, id)).status).toBe(404);

      // The built-in agent stays.
      expect((await api.remove(bob.key, 0)).status).toBe(403);
      expect(await api.remove(s.adminKey, 0)).toMatchObject({
        status: 400,
        body: { error_code: 'INVALID_INPUT' },
      });
      expect((await api.get(bob.key, 987_654)).body).toMatchObject({ error_code: 'PERSONA_NOT_FOUND' });
    });

    it('pages through every visible agent exactly once with a stable total', async () => {
      const mine: number[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await api.create(alice.key, agentBody({ name: `paged ${i}`, is_public: i % 2 === 0 }));
        mine.push(res.body.id);
      }
      for (const key of [alice.key, bob.key]) {
        const full = await api.list(key, { page_size: 1000 });
        const { all, total } = await ids(key);
        expect(total).toBe(full.body.total_items);
        expect(all).toEqual(full.body.items.map((p: { id: number }) => p.id));
        expect(new Set(all).size).toBe(all.length);
      }
      const bobs = (await ids(bob.key)).all;
      mine.forEach((id, i) => {
        expect(bobs.includes(id)).toBe(i % 2 === 0);
      });
      for (const page_size of [0, 1001]) {
        expect((await api.list(bob.key, { page_size })).status).toBe(422);
        expect((await api.adminList(s.adminKey, { page_size })).status).toBe(422);
      }
    });

    it('validates references with 400 naming the ids', async () => {
      const bad = await api.create(alice.key, agentBody({ tool_ids: [1, 31337], groups: [4242] }));
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toContain('31337');
      expect(bad.body.detail).toContain('4242');
      const files = await api.create(alice.key, agentBody({ user_file_ids: ['f'] }));
      expect(files).toMatchObject({ status: 400, body: { error_code: 'INVALID_INPUT' } });
      expect((await api.create(alice.key, { name: 'missing fields' })).status).toBe(422);
    });
  });

  it('answers 401 without a key and 422 for malformed query values', async () => {
    for (const [method, path] of [
      ['GET', '/api/agents'],
      ['GET', '/api/admin/agents'],
      ['GET', '/api/persona/0'],
      ['POST', '/api/persona'],
      ['PATCH', '/api/persona/0'],
      ['DELETE', '/api/persona/0'],
      ['GET', '/api/persona/labels'],
      ['GET', '/api/tool'],
      ['PATCH', '/api/admin/agents/display-priorities'],
    ] as const) {
      const res = await s.request(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(await res.json()).toEqual({ error_code: 'UNAUTHENTICATED', detail: expect.any(String) });
    }
    for (const query of ['page_size=abc', 'page_num=-1', 'include_deleted=maybe', 'page_size=10.5']) {
      const res = await s.request('GET', `/api/agents?${query}`, { key: bob.key });
      expect(res.status, query).toBe(422);
      expect((await res.json()).error_code).toBe('VALIDATION_ERROR');
    }
    expect((await s.request('GET', '/api/persona/abc', { key: bob.key })).status).toBe(422);
    // Beyond the 32-bit id columns: invalid input, never a database error.
    expect((await s.request('GET', '/api/persona/99999999999', { key: bob.key })).status).toBe(422);
    const huge = await s.request('POST', '/api/persona', {
      key: bob.key,
      body: agentBody({ tool_ids: [2 ** 40] }),
    });
    expect(huge.status).toBe(422);
    const reorder = await s.request('PATCH', '/api/admin/agents/display-priorities', {
      key: s.adminKey,
      body: { display_priority_map: { '9999999999': 1 } },
    });
    expect(reorder.status).toBe(404);
  });

  it('serves labels, tools, reordering and the listed/featured flags at their paths', async () => {
    const label = await json(
      await s.request('POST', '/api/persona/labels', { key: bob.key, body: { name: 'ops' } }),
    );
    expect(label).toMatchObject({ status: 200, body: { id: expect.any(Number), name: 'ops' } });
    const labels = await json(await s.request('GET', '/api/persona/labels', { key: bob.key }));
    expect(labels.body).toContainEqual(label.body);
    const renamed = await s.request('PATCH', `/api/admin/persona/label/${label.body.id}`, {
      key: bob.key,
      body: { label_name: 'x' },
    });
    expect(renamed.status).toBe(403);

    const tools = await json(await s.request('GET', '/api/tool', { key: bob.key }));
    expect(tools.body).toContainEqual(expect.objectContaining({ id: 1, in_code_tool_id: 'SearchTool' }));

    const a = (
      await json(
        await s.request('POST', '/api/persona', { key: alice.key, body: agentBody({ is_public: true }) }),
      )
    ).body.id as number;
    const reorder = await s.request('PATCH', '/api/admin/agents/display-priorities', {
      key: s.adminKey,
      body: { display_priority_map: { [a]: -1 } },
    });
    expect(reorder.status).toBe(204);
    const first = await json(await s.request('GET', '/api/agents?page_size=1', { key: bob.key }));
    expect(first.body.items[0].id).toBe(a);
    expect(
      (
        await s.request('PATCH', '/api/admin/agents/display-priorities', {
          key: bob.key,
          body: { display_priority_map: { [a]: 0 } },
        })
      ).status,
    ).toBe(403);

    const unlisted = await s.request('PATCH', `/api/admin/persona/${a}/listed`, {
      key: s.adminKey,
      body: { is_listed: false },
    });
    expect(unlisted.status).toBe(200);
    const bobsList = await json(await s.request('GET', '/api/agents?page_size=1000', { key: bob.key }));
    expect(bobsList.body.items.map((p: { id: number }) => p.id)).not.toContain(a);
    const featured = await json(
      await s.request('PATCH', `/api/admin/persona/${a}/featured`, {
        key: s.adminKey,
        body: { is_featured: true },
      }),
    );
    expect(featured.body).toMatchObject({ is_featured: true, is_listed: false });
    expect(
      (
        await s.request('PATCH', `/api/admin/persona/${a}/featured`, {
          key: alice.key,
          body: { is_featured: false },
        })
      ).status,
    ).toBe(403);
  });
});
