import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMcpServer, startFakeMcpServer } from '../../../../test/fakes/mcp-server.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { type FakeOpenApiService, startFakeOpenApiService } from '../../../../test/fakes/openapi-service.ts';
import { objs, streamAll } from '../chat/chat.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

/**
 * Actions for user groups: a curator creates and manages actions for the groups they curate and not
 * others'; only members of an action's groups use it in chat; admins manage everything.
 */
let llm: FakeLlmServer;
let api: FakeOpenApiService;
let mcp: FakeMcpServer;
type Key = { key: string; user_id: string };
let carol: Key; // curates "research"
let dave: Key; // curates "sales"
let mia: Key; // member of "research"
let otto: Key; // in no group
let research: number;
let sales: number;

beforeAll(async () => {
  [llm, api, mcp] = await Promise.all([startFakeOpenAi(), startFakeOpenApiService(), startFakeMcpServer()]);
});
afterAll(async () => {
  await Promise.all([llm?.close(), api?.close(), mcp?.close()]);
});
const t = useTestRuntime(() => actionsEnv(llm.baseURL));
beforeAll(async () => {
  carol = await t.createKey('curator', 'carol');
  dave = await t.createKey('curator', 'dave');
  mia = await t.createKey('basic', 'mia');
  otto = await t.createKey('basic', 'otto');
  const admin = t.caller(t.adminKey);
  research = (await admin.userGroups.create({ name: 'research', user_ids: [carol.user_id, mia.user_id] })).id;
  sales = (await admin.userGroups.create({ name: 'sales', user_ids: [dave.user_id] })).id;
  await admin.userGroups.setCurator({ user_group_id: research, user_id: carol.user_id, is_curator: true });
  await admin.userGroups.setCurator({ user_group_id: sales, user_id: dave.user_id, is_curator: true });
});

describe('actions for user groups', () => {
  it('lets a curator manage OpenAPI actions of the groups they curate only', async () => {
    const asCarol = t.caller(carol.key);
    const asDave = t.caller(dave.key);
    expect(await errorOf(asCarol.actions.createCustomTool({ definition: api.spec() }))).toMatchObject({
      status: 400,
      detail: 'A curator’s action is for the groups they curate: name at least one in `groups`',
    });
    expect(
      await errorOf(asCarol.actions.createCustomTool({ definition: api.spec(), groups: [research, sales] })),
    ).toMatchObject({ status: 403, detail: `You do not curate user groups ${sales}` });
    expect(
      await errorOf(asCarol.actions.createCustomTool({ definition: api.spec(), groups: [999999] })),
    ).toMatchObject({ status: 400, detail: 'Unknown user groups: 999999' });
    expect(
      (await errorOf(t.caller(mia.key).actions.createCustomTool({ definition: api.spec() }))).status,
    ).toBe(403);

    const action = await asCarol.actions.createCustomTool({ definition: api.spec(), groups: [research] });
    expect(action.groups).toEqual([research]);
    expect(
      await asCarol.actions.updateCustomTool({ tool_id: action.id, description: 'Research weather' }),
    ).toMatchObject({ description: 'Research weather' });
    // Dave (curator of sales, not in research) cannot see it: exactly as if it did not exist.
    const absent = await errorOf(asDave.actions.updateCustomTool({ tool_id: 999999, description: 'x' }));
    for (const call of [
      () => asDave.actions.updateCustomTool({ tool_id: action.id, description: 'mine now' }),
      () => asDave.actions.deleteCustomTool({ tool_id: action.id }),
    ])
      expect(await errorOf(call())).toMatchObject({
        status: 404,
        error_code: absent.error_code,
        detail: absent.detail.replace('999999', String(action.id)),
      });
    expect(
      (await errorOf(asCarol.actions.updateCustomTool({ tool_id: action.id, groups: [sales] }))).status,
    ).toBe(403);
    // An admin's unscoped action is not a curator's to change.
    const global = await t
      .caller(t.adminKey)
      .actions.createCustomTool({ definition: api.spec(), name: 'Global' });
    expect(global.groups).toEqual([]);
    expect(await errorOf(asCarol.actions.deleteCustomTool({ tool_id: global.id }))).toMatchObject({
      status: 403,
      detail: `Only an admin or a curator of all of its groups can manage action ${global.id}`,
    });

    // Only members of the action's groups see it in the tool list and use it in chat.
    expect((await t.caller(mia.key).tools.list({})).map((x) => x.id)).toContain(action.id);
    expect((await t.caller(otto.key).tools.list({})).map((x) => x.id)).not.toContain(action.id);
    expect((await t.caller(otto.key).tools.list({})).map((x) => x.id)).toContain(global.id);
    // Others get a note in chat, and the API sees nothing.
    const agent = await t.caller(t.adminKey).personas.create(agentInput('research weather', [action.id]));
    llm.enqueue(
      { toolCalls: [{ id: 'f', name: 'getForecast', arguments: '{"city":"Lyon"}' }] },
      { tokens: ['ok'] },
    );
    const miaLines = await streamAll(t.caller(mia.key), {
      message: 'forecast Lyon',
      chat_session_info: { persona_id: agent.id },
    });
    expect(objs(miaLines).find((o) => o.type === 'custom_tool_delta')).toMatchObject({ error: null });
    const seen = api.requests.length;
    const before = llm.requests.length;
    await streamAll(t.caller(otto.key), {
      message: 'forecast Lyon',
      chat_session_info: { persona_id: agent.id },
    });
    expect(llm.requests[before]!.tools?.map((x: any) => x.function.name) ?? []).not.toContain('getForecast');
    expect(llm.requests[before]!.messages[0].content).toContain(
      'is not available: it is reserved to user groups this user is not in',
    );
    expect(api.requests.length).toBe(seen);
    // Its definition, server URL and header names are not readable by non-members: 404 like an absent id.
    expect((await t.caller(mia.key).actions.getTool({ tool_id: action.id })).id).toBe(action.id);
    const absentTool = await errorOf(t.caller(otto.key).actions.getTool({ tool_id: 999999 }));
    for (const who of [otto, dave])
      expect(await errorOf(t.caller(who.key).actions.getTool({ tool_id: action.id }))).toEqual({
        ...absentTool,
        detail: absentTool.detail.replace('999999', String(action.id)),
      });

    // The curator removes it.
    await asCarol.actions.deleteCustomTool({ tool_id: action.id });
    expect((await errorOf(t.caller(t.adminKey).actions.getTool({ tool_id: action.id }))).status).toBe(404);
  });

  it('lets a curator manage MCP servers of the groups they curate only', async () => {
    const asCarol = t.caller(carol.key);
    const asDave = t.caller(dave.key);
    const base = {
      name: 'Research calc',
      server_url: mcp.url,
      transport: 'STREAMABLE_HTTP' as const,
      auth_type: 'NONE' as const,
      auth_performer: 'ADMIN' as const,
    };
    expect((await errorOf(asCarol.mcp.create(base))).status).toBe(400);
    expect((await errorOf(asCarol.mcp.create({ ...base, groups: [sales] }))).status).toBe(403);
    const server = await asCarol.mcp.create({ ...base, groups: [research] });
    const listed = await asCarol.mcp.tools({ server_id: server.server_id });
    expect(listed.tools.map((x) => x.name)).toEqual(['add', 'whoami']);
    expect((await asCarol.mcp.list({})).mcp_servers.map((s) => s.id)).toEqual([server.server_id]);
    expect((await asDave.mcp.list({})).mcp_servers).toEqual([]);
    // Not a member of research: the server answers like an absent one.
    for (const call of [
      () => asDave.mcp.get({ server_id: server.server_id }),
      () => asDave.mcp.tools({ server_id: server.server_id }),
      () => asDave.mcp.update({ server_id: server.server_id, name: 'x' }),
      () => asDave.mcp.delete({ server_id: server.server_id }),
    ])
      expect(await errorOf(call())).toMatchObject({
        status: 404,
        error_code: 'MCP_SERVER_NOT_FOUND',
        detail: `MCP server ${server.server_id} not found`,
      });
    expect((await asCarol.mcp.get({ server_id: server.server_id })).groups).toEqual([research]);
    // Its tools are read only by members, like the server.
    const toolId = listed.tools[0]!.id;
    expect((await t.caller(mia.key).actions.getTool({ tool_id: toolId })).mcp_server_id).toBe(
      server.server_id,
    );
    for (const who of [otto, dave])
      expect(await errorOf(t.caller(who.key).actions.getTool({ tool_id: toolId }))).toMatchObject({
        status: 404,
        error_code: 'TOOL_NOT_FOUND',
        detail: `Tool ${toolId} not found`,
      });
    // Users see the servers they may use.
    expect((await t.caller(mia.key).mcp.listForUser({})).mcp_servers.map((s) => s.id)).toContain(
      server.server_id,
    );
    expect((await t.caller(otto.key).mcp.listForUser({})).mcp_servers.map((s) => s.id)).not.toContain(
      server.server_id,
    );
    expect(await errorOf(t.caller(otto.key).mcp.oauthConnect({ server_id: server.server_id }))).toMatchObject(
      { status: 404, error_code: 'MCP_SERVER_NOT_FOUND' },
    );
    expect(
      await errorOf(
        t.caller(otto.key).mcp.saveCredentials({ server_id: server.server_id, credentials: { k: 'v' } }),
      ),
    ).toMatchObject({ status: 404, error_code: 'MCP_SERVER_NOT_FOUND' });

    const add = listed.tools.find((x) => x.name === 'add')!;
    expect((await t.caller(mia.key).tools.list({})).map((x) => x.id)).toContain(add.id);
    expect((await t.caller(otto.key).tools.list({})).map((x) => x.id)).not.toContain(add.id);
    const agent = await t.caller(t.adminKey).personas.create(agentInput('research calc', [add.id]));
    const before = llm.requests.length;
    await streamAll(t.caller(otto.key), {
      message: 'add 2 and 3',
      chat_session_info: { persona_id: agent.id },
    });
    expect(llm.requests[before]!.messages[0].content).toContain(
      'The tools add of MCP server "Research calc" are not available: the server is reserved to user groups this user is not in.',
    );
    expect(mcp.calls).toEqual([]);

    // Deleting its only group keeps the server reserved (to admins), never open to all: its former
    // curator no longer sees it.
    await t.caller(t.adminKey).userGroups.delete({ user_group_id: research });
    expect((await errorOf(asCarol.mcp.get({ server_id: server.server_id }))).status).toBe(404);
    expect((await t.caller(otto.key).mcp.listForUser({})).mcp_servers.map((s) => s.id)).not.toContain(
      server.server_id,
    );
    await t.caller(t.adminKey).mcp.delete({ server_id: server.server_id });
  });
});
