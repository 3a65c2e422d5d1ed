import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMcpServer, startFakeMcpServer } from '../../../../test/fakes/mcp-server.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { type FakeOpenApiService, startFakeOpenApiService } from '../../../../test/fakes/openapi-service.ts';
import { streamAll } from '../chat/chat.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

/**
 * Secrets stored with an action are bound to the origin they were entered for: a curator who cannot
 * read an action's header values cannot have them sent to a server of theirs by moving the action.
 */
let llm: FakeLlmServer;
let api: FakeOpenApiService;
let evil: FakeOpenApiService;
let mcp: FakeMcpServer;
type Key = { key: string; user_id: string };
let carol: Key; // curates "research"
let mia: Key; // member of "research"
let research: number;

beforeAll(async () => {
  [llm, api, evil, mcp] = await Promise.all([
    startFakeOpenAi(),
    startFakeOpenApiService(),
    startFakeOpenApiService(),
    startFakeMcpServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([llm?.close(), api?.close(), evil?.close(), mcp?.close()]);
});
const t = useTestRuntime(() => actionsEnv(llm.baseURL));
beforeAll(async () => {
  carol = await t.createKey('curator', 'carol');
  mia = await t.createKey('basic', 'mia');
  const admin = t.admin();
  research = (await admin.userGroups.create({ name: 'research', user_ids: [carol.user_id, mia.user_id] })).id;
  await admin.userGroups.setCurator({ user_group_id: research, user_id: carol.user_id, is_curator: true });
});

/** A server on another port that answers every request with a 307 to the same path at `target`'s origin. */
async function startRedirector(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const origin = new URL(target).origin;
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(307, { location: `${origin}${req.url ?? '/'}` }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Mia asks the agent, and the model calls the action's forecast operation. */
async function useAction(agentId: number) {
  llm.enqueue(
    { toolCalls: [{ id: 'call_1', name: 'getForecast', arguments: '{"city":"Paris","days":1}' }] },
    { tokens: ['Sunny.'] },
  );
  await streamAll(t.caller(mia.key), {
    message: 'Weather in Paris?',
    chat_session_info: { persona_id: agentId },
  });
}

describe('action secrets bound to their origin', () => {
  it("refuses a curator's move of an action to another server while its header values are kept; the key never reaches it", async () => {
    const admin = t.caller(t.adminKey);
    const asCarol = t.caller(carol.key);
    const action = await admin.actions.createCustomTool({
      definition: api.spec(),
      custom_headers: [{ key: 'X-Api-Key', value: 'admin-weather-key' }],
      groups: [research],
    });
    const agentId = (await admin.personas.create(agentInput('weather', [action.id]))).id;

    const withoutHeaders = await errorOf(
      asCarol.actions.updateCustomTool({ tool_id: action.id, definition: evil.spec() }),
    );
    expect(withoutHeaders).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('custom_headers'),
    });
    expect(withoutHeaders.detail).toContain(new URL(evil.url).origin);
    expect(
      await errorOf(
        asCarol.actions.updateCustomTool({
          tool_id: action.id,
          definition: evil.spec(),
          custom_headers: [{ key: 'X-Api-Key', value: '********' }],
        }),
      ),
    ).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('X-Api-Key'),
    });
    // Admins too: the rule is about the secret, not the role.
    expect(
      await errorOf(admin.actions.updateCustomTool({ tool_id: action.id, definition: evil.spec() })),
    ).toMatchObject({ status: 400, error_code: 'SECRET_REENTRY_REQUIRED' });

    await useAction(agentId);
    expect(evil.requests).toEqual([]);
    expect(api.requests.at(-1)?.headers['x-api-key']).toBe('admin-weather-key');

    // Another description of the same server keeps the stored values.
    await asCarol.actions.updateCustomTool({
      tool_id: action.id,
      definition: { ...api.spec(), info: { ...(api.spec().info as object), version: '2' } },
      custom_headers: [{ key: 'X-Api-Key', value: '********' }],
    });
    // With the value entered again, the action moves: the new server gets the value its mover gave.
    await asCarol.actions.updateCustomTool({
      tool_id: action.id,
      definition: evil.spec(),
      custom_headers: [{ key: 'X-Api-Key', value: 'carol-key' }],
    });
    await useAction(agentId);
    expect(evil.requests.map((r) => r.headers['x-api-key'])).toEqual(['carol-key']);
  });

  it('keeps an MCP server at the address its secrets were entered for: an update cannot move it', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.mcp.create({
      name: 'Calculator',
      server_url: mcp.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'API_TOKEN',
      auth_performer: 'ADMIN',
      api_token: 'admin-mcp-token',
      groups: [research],
    });
    await t.caller(carol.key).mcp.update({
      server_id: created.server_id,
      name: 'Moved?',
      server_url: evil.url,
    } as never);
    expect(await admin.mcp.get({ server_id: created.server_id })).toMatchObject({
      name: 'Moved?',
      server_url: mcp.url,
    });
  });

  it("moves an OAuth configuration's token endpoint only with its client secret entered again, and drops users' tokens", async () => {
    const admin = t.caller(t.adminKey);
    const config = await admin.oauthConfigs.create({
      name: 'Provider',
      authorization_url: 'https://idp.example/authorize',
      token_url: 'https://idp.example/token',
      client_id: 'kas',
      client_secret: 'client-secret',
    });
    await t.deps.db
      .insertInto('oauth_user_tokens')
      .values({
        oauth_config_id: config.id,
        user_id: mia.user_id,
        token_enc: t.deps.secrets.encrypt(JSON.stringify({ access_token: 'a', refresh_token: 'r' })),
        expires_at: null,
      })
      .execute();
    const tokens = () =>
      t.deps.db
        .selectFrom('oauth_user_tokens')
        .select('user_id')
        .where('oauth_config_id', '=', config.id)
        .execute();

    expect(
      await errorOf(
        admin.oauthConfigs.update({ oauth_config_id: config.id, token_url: `${evil.url}/token` }),
      ),
    ).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('client_secret'),
    });
    await admin.oauthConfigs.update({
      oauth_config_id: config.id,
      token_url: 'https://idp.example/oauth/token',
    });
    expect(await tokens()).toHaveLength(1);

    await admin.oauthConfigs.update({
      oauth_config_id: config.id,
      token_url: `${evil.url}/token`,
      client_secret: 'new-secret',
    });
    expect(await admin.oauthConfigs.get({ oauth_config_id: config.id })).toMatchObject({
      token_url: `${evil.url}/token`,
    });
    expect(await tokens()).toEqual([]);
  });

  it("does not send an action's or an MCP server's header values along a redirect to another origin", async () => {
    const admin = t.caller(t.adminKey);
    const toEvil = await startRedirector(evil.url);
    const toMcp = await startRedirector(mcp.url);
    try {
      const action = await admin.actions.createCustomTool({
        definition: { ...api.spec(), servers: [{ url: `${toEvil.url}/v1` }] },
        custom_headers: [{ key: 'X-Api-Key', value: 'admin-weather-key' }],
        groups: [research],
      });
      const agentId = (await admin.personas.create(agentInput('redirected weather', [action.id]))).id;
      const before = evil.requests.length;
      await useAction(agentId);
      const arrived = evil.requests.slice(before);
      expect(arrived.map((r) => r.url)).toEqual(['/v1/forecast/Paris?days=1']);
      expect(arrived[0]?.headers['x-api-key']).toBeUndefined();

      const seen = mcp.requests.length;
      const server = await admin.mcp.create({
        name: 'Redirected',
        server_url: `${toMcp.url}${new URL(mcp.url).pathname}`,
        transport: 'STREAMABLE_HTTP',
        auth_type: 'API_TOKEN',
        auth_performer: 'ADMIN',
        api_token: 'admin-mcp-token',
        auth_template: { headers: { 'X-Mcp-Key': '{api_key}', Authorization: 'Bearer {api_key}' } },
      });
      // The MCP SDK does not follow a redirect to another origin itself; were it to, the outbound guard drops the headers.
      await admin.mcp.tools({ server_id: server.server_id });
      for (const headers of mcp.requests.slice(seen)) {
        expect(headers['x-mcp-key']).toBeUndefined();
        expect(headers.authorization).toBeUndefined();
      }
    } finally {
      await Promise.all([toEvil.close(), toMcp.close()]);
    }
  });
});
