import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeMcpServer,
  startFakeMcpServer,
  startFakeSseMcpServer,
} from '../../../../test/fakes/mcp-server.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { answerOf, objs, streamAll } from '../chat/chat.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

let llm: FakeLlmServer;
let open: FakeMcpServer;
let shared: FakeMcpServer;
let perUser: FakeMcpServer;
let alice: { key: string; user_id: string };
let bob: { key: string; user_id: string };

beforeAll(async () => {
  [llm, open, shared, perUser] = await Promise.all([
    startFakeOpenAi(),
    startFakeMcpServer(),
    startFakeMcpServer({ authorize: (h) => (h['x-api-key'] === 'shared-1' ? 'the organization' : null) }),
    startFakeMcpServer({
      authorize: (h) =>
        ({ 'Token alice-key': 'alice', 'Token bob-key': 'bob', 'Token admin-key': 'admin' })[
          String(h.authorization)
        ] ?? null,
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([llm, open, shared, perUser].map((s) => s?.close()));
});
const t = useTestRuntime(() => actionsEnv(llm.baseURL));
beforeAll(async () => {
  alice = await t.createKey('basic', 'alice');
  bob = await t.createKey('basic', 'bob');
});

describe('MCP servers', () => {
  it('connects a server without authentication, lists its tools and calls one in chat', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.mcp.create({
      name: 'Calculator',
      server_url: open.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'NONE',
      auth_performer: 'ADMIN',
    });
    expect(created).toMatchObject({ server_name: 'Calculator', no_user_authentication_required: true });
    const listed = await admin.mcp.tools({ server_id: created.server_id });
    expect(listed.tools.map((x) => x.name)).toEqual(['add', 'whoami']);
    expect(listed.message).toBeNull();
    const add = listed.tools.find((x) => x.name === 'add')!;
    expect(add.input_schema).toMatchObject({ properties: { a: { type: 'number' } } });
    expect(await admin.mcp.get({ server_id: created.server_id })).toMatchObject({
      status: 'CONNECTED',
      tool_count: 2,
    });
    const tools = await t.caller(alice.key).tools.list({});
    expect(tools).toContainEqual(
      expect.objectContaining({ id: add.id, kind: 'mcp', mcp_server_id: created.server_id }),
    );

    const agent = await admin.personas.create(agentInput('calc', [add.id]));
    llm.enqueue({ toolCalls: [{ id: 'c', name: 'add', arguments: '{"a":2,"b":3}' }] }, { tokens: ['Five.'] });
    const before = llm.requests.length;
    const lines = await streamAll(t.caller(alice.key), {
      message: 'What is 2 + 3?',
      chat_session_info: { persona_id: agent.id },
    });
    expect(llm.requests[before]!.tools.map((x: any) => x.function.name)).toEqual(['add']);
    expect(objs(lines).find((o) => o.type === 'custom_tool_delta')).toMatchObject({
      tool_name: 'add',
      tool_id: add.id,
      response_type: 'text',
      data: '5',
      error: null,
    });
    expect(answerOf(lines)).toBe('Five.');

    await admin.mcp.update({ server_id: created.server_id, selected_tools: ['whoami'] });
    expect((await t.caller(alice.key).tools.list({})).map((x) => x.id)).not.toContain(add.id);

    await admin.mcp.delete({ server_id: created.server_id });
    expect((await admin.personas.get({ persona_id: agent.id })).tools).toEqual([]);
    expect(await errorOf(admin.mcp.get({ server_id: created.server_id }))).toMatchObject({
      status: 404,
      error_code: 'MCP_SERVER_NOT_FOUND',
    });
  });

  it('uses one shared API key through a header template; a wrong key lists nothing and says why', async () => {
    const admin = t.caller(t.adminKey);
    const base = {
      name: 'Shared',
      server_url: shared.url,
      transport: 'STREAMABLE_HTTP' as const,
      auth_type: 'API_TOKEN' as const,
      auth_performer: 'ADMIN' as const,
      auth_template: { headers: { 'X-Api-Key': '{api_key}' } },
    };
    expect(await errorOf(admin.mcp.create(base))).toMatchObject({
      status: 400,
      detail: 'A shared API key (api_token) is required with auth_performer ADMIN',
    });
    expect(
      await errorOf(
        admin.mcp.create({ ...base, api_token: 'x', auth_template: { headers: { 'X-Api-Key': 'k' } } }),
      ),
    ).toMatchObject({
      status: 400,
      detail: 'auth_template must contain {api_key} somewhere in a header value',
    });
    const wrong = await admin.mcp.create({ ...base, api_token: 'nope' });
    const none = await admin.mcp.tools({ server_id: wrong.server_id });
    expect(none.tools).toEqual([]);
    expect(none.message).toMatch(/refused the authentication.*The URL or the authentication is wrong/);

    const good = await admin.mcp.create({ ...base, api_token: 'shared-1' });
    const listed = await admin.mcp.tools({ server_id: good.server_id });
    const whoami = listed.tools.find((x) => x.name === 'whoami')!;
    const snapshot = await admin.mcp.get({ server_id: good.server_id });
    expect(snapshot).toMatchObject({ has_api_token: true, user_authenticated: true });
    expect(JSON.stringify(snapshot)).not.toContain('shared-1');
    const raw = await t.deps.db
      .selectFrom('mcp_servers')
      .select('admin_config_enc')
      .where('id', '=', good.server_id)
      .executeTakeFirstOrThrow();
    expect(raw.admin_config_enc).not.toContain('shared-1');

    const agent = await admin.personas.create(agentInput('shared', [whoami.id]));
    llm.enqueue({ toolCalls: [{ id: 'w', name: 'whoami', arguments: '{}' }] }, { tokens: ['ok'] });
    const lines = await streamAll(t.caller(bob.key), {
      message: 'who am I',
      chat_session_info: { persona_id: agent.id },
    });
    expect(objs(lines).find((o) => o.type === 'custom_tool_delta')).toMatchObject({
      data: 'You are the organization',
    });
  });

  it('uses each user’s own key, never another’s; a user without one gets the tool skipped with a note', async () => {
    const admin = t.caller(t.adminKey);
    expect(
      await errorOf(
        admin.mcp.create({
          name: 'x',
          server_url: perUser.url,
          transport: 'STREAMABLE_HTTP',
          auth_type: 'API_TOKEN',
          auth_performer: 'PER_USER',
          api_token: 'k',
        }),
      ),
    ).toMatchObject({ status: 400 });
    const server = await admin.mcp.create({
      name: 'Per user',
      server_url: perUser.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'API_TOKEN',
      auth_performer: 'PER_USER',
      auth_template: { headers: { Authorization: 'Token {api_key}' } },
    });
    expect(server.no_user_authentication_required).toBe(false);
    const first = await admin.mcp.tools({ server_id: server.server_id });
    expect(first.tools).toEqual([]);
    expect(first.message).toContain('has not entered their key');
    expect(
      await admin.mcp.saveCredentials({ server_id: server.server_id, credentials: { api_key: 'admin-key' } }),
    ).toMatchObject({ success: true, authenticated: true });
    const whoami = (await admin.mcp.tools({ server_id: server.server_id })).tools.find(
      (x) => x.name === 'whoami',
    )!;

    const aliceCaller = t.caller(alice.key);
    expect(
      (await aliceCaller.mcp.listForUser({})).mcp_servers.find((s) => s.id === server.server_id),
    ).toMatchObject({
      required_fields: ['api_key'],
      user_authenticated: false,
    });
    expect(
      await aliceCaller.mcp.saveCredentials({
        server_id: server.server_id,
        credentials: { api_key: 'wrong' },
      }),
    ).toMatchObject({ success: false, authenticated: false });
    expect(
      await errorOf(
        aliceCaller.mcp.saveCredentials({ server_id: server.server_id, credentials: { token: 'x' } }),
      ),
    ).toMatchObject({ status: 400, detail: 'Missing credentials: api_key' });
    await aliceCaller.mcp.saveCredentials({
      server_id: server.server_id,
      credentials: { api_key: 'alice-key' },
    });

    const agent = await admin.personas.create(agentInput('per-user', [1, whoami.id]));
    llm.enqueue({ toolCalls: [{ id: 'w', name: 'whoami', arguments: '{}' }] }, { tokens: ['hi alice'] });
    const aliceLines = await streamAll(aliceCaller, {
      message: 'who am I',
      chat_session_info: { persona_id: agent.id },
    });
    expect(objs(aliceLines).find((o) => o.type === 'custom_tool_delta')).toMatchObject({
      data: 'You are alice',
    });
    expect(perUser.calls.at(-1)).toMatchObject({ tool: 'whoami', who: 'alice' });

    const before = llm.requests.length;
    const bobLines = await streamAll(t.caller(bob.key), {
      message: 'who am I',
      chat_session_info: { persona_id: agent.id },
    });
    const request = llm.requests[before]!;
    expect(request.tools.map((x: any) => x.function.name)).toEqual(['internal_search']);
    expect(request.messages[0].content).toContain(
      'The tools whoami of MCP server "Per user" are not available: the user has not entered their key yet',
    );
    expect(objs(bobLines).some((o) => o.type === 'custom_tool_start')).toBe(false);
    expect(perUser.calls.filter((c) => c.who === 'bob')).toEqual([]);

    await aliceCaller.mcp.deleteCredentials({ server_id: server.server_id });
    expect(await errorOf(aliceCaller.mcp.deleteCredentials({ server_id: server.server_id }))).toMatchObject({
      status: 404,
    });
  });

  it('refuses pass-through without OIDC and OAuth not per user; needs an admin', async () => {
    const admin = t.caller(t.adminKey);
    const input = {
      name: 'pt',
      server_url: open.url,
      transport: 'STREAMABLE_HTTP' as const,
      auth_type: 'PT_OAUTH' as const,
      auth_performer: 'PER_USER' as const,
    };
    expect((await errorOf(admin.mcp.create(input))).detail).toContain('no OIDC configured');
    expect(
      (await errorOf(admin.mcp.create({ ...input, auth_type: 'OAUTH', auth_performer: 'ADMIN' }))).detail,
    ).toBe('auth_type OAUTH acts for each user: auth_performer must be PER_USER');
    expect((await errorOf(t.caller(alice.key).mcp.create({ ...input, auth_type: 'NONE' }))).status).toBe(403);
    expect((await errorOf(t.caller(alice.key).mcp.list({}))).status).toBe(403);
  });

  it('an unreachable server lists nothing and says so', async () => {
    const admin = t.caller(t.adminKey);
    const s = await admin.mcp.create({
      name: 'gone',
      server_url: 'http://127.0.0.1:9/mcp',
      transport: 'STREAMABLE_HTTP',
      auth_type: 'NONE',
      auth_performer: 'ADMIN',
    });
    const r = await admin.mcp.tools({ server_id: s.server_id });
    expect(r.tools).toEqual([]);
    expect(r.message).toMatch(/^Could not reach the MCP server at http:\/\/127\.0\.0\.1:9\/mcp/);
  });

  it('falls back to the legacy HTTP+SSE transport for a server that speaks only that', async () => {
    const legacy = await startFakeSseMcpServer();
    try {
      const admin = t.caller(t.adminKey);
      // Declared as Streamable HTTP: the POST is refused (405), the client falls back to SSE.
      const auto = await admin.mcp.create({
        name: 'Legacy',
        server_url: legacy.url,
        transport: 'STREAMABLE_HTTP',
        auth_type: 'NONE',
        auth_performer: 'ADMIN',
      });
      const listed = await admin.mcp.tools({ server_id: auto.server_id });
      expect(listed).toMatchObject({ message: null });
      expect(listed.tools.map((x) => x.name)).toEqual(['add']);
      expect(legacy.requests.some((h) => String(h.accept).includes('text/event-stream'))).toBe(true);

      const agent = await admin.personas.create(agentInput('legacy calc', [listed.tools[0]!.id]));
      llm.enqueue(
        { toolCalls: [{ id: 's', name: 'add', arguments: '{"a":20,"b":22}' }] },
        { tokens: ['42'] },
      );
      const lines = await streamAll(t.caller(alice.key), {
        message: 'What is 20 + 22?',
        chat_session_info: { persona_id: agent.id },
      });
      expect(objs(lines).find((o) => o.type === 'custom_tool_delta')).toMatchObject({
        data: '42',
        error: null,
      });
      expect(legacy.calls).toEqual([{ tool: 'add', who: 'sse', args: { a: 20, b: 22 } }]);

      // Declared as SSE: used directly.
      const direct = await admin.mcp.create({
        name: 'Legacy direct',
        server_url: legacy.url,
        transport: 'SSE',
        auth_type: 'NONE',
        auth_performer: 'ADMIN',
      });
      expect((await admin.mcp.tools({ server_id: direct.server_id })).tools.map((x) => x.name)).toEqual([
        'add',
      ]);
    } finally {
      await legacy.close();
    }
  });
});
