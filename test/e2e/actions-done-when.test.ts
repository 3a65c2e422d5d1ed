/**
 * Issue 13's "Done when", walked as a new user would, over HTTP on both databases: upload an OpenAPI
 * spec with trailing commas, see one tool per endpoint, enable two on an agent, chat with a
 * tool-calling model and watch the calls stream; connect an MCP server with each of the five auth
 * methods and see its tools; remove a server and see its tools gone from the agent.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { agentInput } from '@kas/server/testing';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMcpServer, startFakeMcpServer } from '../fakes/mcp-server.ts';
import { type FakeOidcProvider, startFakeOidcProvider } from '../fakes/oidc-provider.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { type FakeOpenApiService, startFakeOpenApiService } from '../fakes/openapi-service.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { readAll } from './chat-helpers.ts';

let provider: FakeOidcProvider;
let llm: FakeLlmServer;
let api: FakeOpenApiService;
const servers: Record<string, FakeMcpServer> = {};
const indicators: string[] = [];
const metadataPath = '/.well-known/oauth-protected-resource/mcp';

beforeAll(async () => {
  provider = await startFakeOidcProvider(
    { admin: { email: 'admin@corp.example' }, ann: { email: 'ann@corp.example' } },
    { registration: true, resource: { indicators, scope: 'mcp:tools', accessTokenTtl: () => 3600 } },
  );
  const jwks = createRemoteJWKSet(new URL(`${provider.issuer}/jwks`));
  const bearer = (h: IncomingHttpHeaders) => /^Bearer (.+)$/.exec(String(h.authorization ?? ''))?.[1];
  const jwtSubject = async (token: string | undefined, audience: string) =>
    token
      ? jwtVerify(token, jwks, { issuer: provider.issuer, audience }).then(
          ({ payload }) => String(payload.sub),
          () => null,
        )
      : null;
  [llm, api] = await Promise.all([startFakeOpenAi(), startFakeOpenApiService()]);
  servers.none = await startFakeMcpServer();
  servers.shared = await startFakeMcpServer({
    authorize: (h) => (h['x-api-key'] === 'org-key' ? 'the organization' : null),
  });
  servers.perUser = await startFakeMcpServer({
    authorize: (h) =>
      ({ 'Token ann-key': 'ann', 'Token admin-key': 'admin' })[String(h.authorization)] ?? null,
  });
  servers.oauth = await startFakeMcpServer({
    authorize: (h) => jwtSubject(bearer(h), servers.oauth!.url),
    challenge: (url) => `Bearer resource_metadata="${new URL(metadataPath, url)}"`,
    routes: {
      [metadataPath]: (url) => ({
        resource: url,
        authorization_servers: [provider.issuer],
        scopes_supported: ['mcp:tools'],
      }),
    },
  });
  servers.passThrough = await startFakeMcpServer({
    authorize: (h) => jwtSubject(bearer(h), provider.clientId),
  });
  indicators.push(servers.oauth.url);
});
afterAll(async () => {
  await Promise.all([provider, llm, api, ...Object.values(servers)].map((x) => x?.close()));
});

describe.each(['pglite', 'postgres'] as const)('issue 13 done-when on %s', (db) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      db,
      env: {
        KAS_OIDC_ISSUER: provider.issuer,
        KAS_OIDC_AUDIENCE: provider.clientId,
        KAS_OIDC_ADMIN_EMAILS: 'admin@corp.example',
        KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
        KAS_LLM_PROVIDER: 'openai',
        KAS_LLM_BASE_URL: llm.baseURL,
      },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const res = await s.request(method, path, { key, body });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return (text ? JSON.parse(text) : null) as any;
  };
  const agentBody = (tool_ids: number[]) => agentInput('helper', tool_ids);

  it('OpenAPI: trailing commas, one tool per endpoint, two enabled, calls streamed', async () => {
    const text = api.specText();
    expect(text).toMatch(/,\s*\}/);
    const action = await call('POST', '/api/admin/tool/custom', s.adminKey, { definition: text });
    expect(action.methods.map((m: any) => `${m.method} ${m.path}`).sort()).toEqual([
      'GET /big',
      'GET /forecast/{city}',
      'GET /slow',
      'POST /alerts',
    ]);
    const listed = await call('GET', '/api/tool', s.adminKey);
    expect(listed.find((x: any) => x.id === action.id)).toBeDefined();
    // A second action so that two are enabled on the agent.
    const second = await call('POST', '/api/admin/tool/custom', s.adminKey, {
      definition: api.spec(),
      name: 'Weather alerts',
    });
    const agent = await call('POST', '/api/persona', s.adminKey, agentBody([action.id, second.id]));
    expect((await call('GET', `/api/persona/${agent.id}`, s.adminKey)).tools.map((x: any) => x.id)).toEqual([
      action.id,
      second.id,
    ]);
    llm.enqueue(
      { toolCalls: [{ id: 'f', name: 'getForecast', arguments: '{"city":"Porto"}' }] },
      { tokens: ['Sunny in Porto.'] },
    );
    const lines = await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key: s.adminKey,
        body: { message: 'Weather in Porto?', chat_session_info: { persona_id: agent.id } },
      }),
    );
    const types = lines.filter((l) => l.obj).map((l) => l.obj.type);
    expect(types).toEqual(
      expect.arrayContaining(['custom_tool_start', 'custom_tool_args', 'custom_tool_delta', 'message_delta']),
    );
    expect(types.indexOf('custom_tool_start')).toBeLessThan(types.indexOf('custom_tool_delta'));
    expect(lines.find((l) => l.obj?.type === 'custom_tool_args')?.obj).toMatchObject({
      tool_name: 'getForecast',
      tool_args: { city: 'Porto' },
    });
    expect(lines.find((l) => l.obj?.type === 'custom_tool_delta')?.obj).toMatchObject({
      tool_name: 'getForecast',
      error: null,
    });
  }, 60_000);

  it('MCP: each of the five auth methods lists its tools; removal clears the agent', async () => {
    const create = (name: string, body: Record<string, unknown>) =>
      call('POST', '/api/admin/mcp/servers/create', s.adminKey, {
        name,
        transport: 'STREAMABLE_HTTP',
        ...body,
      });
    const toolsOf = (id: number, key = s.adminKey) => call('GET', `/api/admin/mcp/server/${id}/tools`, key);
    const names = (r: any) => r.tools.map((x: any) => x.name);

    const none = await create('none', {
      server_url: servers.none!.url,
      auth_type: 'NONE',
      auth_performer: 'ADMIN',
    });
    expect(names(await toolsOf(none.server_id))).toEqual(['add', 'whoami']);

    const shared = await create('shared', {
      server_url: servers.shared!.url,
      auth_type: 'API_TOKEN',
      auth_performer: 'ADMIN',
      api_token: 'org-key',
      auth_template: { headers: { 'X-Api-Key': '{api_key}' } },
    });
    expect(names(await toolsOf(shared.server_id))).toEqual(['add', 'whoami']);

    const perUser = await create('per user', {
      server_url: servers.perUser!.url,
      auth_type: 'API_TOKEN',
      auth_performer: 'PER_USER',
      auth_template: { headers: { Authorization: 'Token {api_key}' } },
    });
    const ann = await s.createKey('basic', 'ann');
    const saved = await call('POST', '/api/mcp/user-credentials', ann.key, {
      server_id: perUser.server_id,
      credentials: { api_key: 'ann-key' },
    });
    expect(saved).toMatchObject({ success: true, authenticated: true });
    // The admin has no key of their own: nothing listed, and the answer says why.
    expect((await toolsOf(perUser.server_id)).message).toContain('has not entered their key');
    await call('POST', '/api/mcp/user-credentials', s.adminKey, {
      server_id: perUser.server_id,
      credentials: { api_key: 'admin-key' },
    });
    expect(names(await toolsOf(perUser.server_id))).toEqual(['add', 'whoami']);

    const oauth = await create('oauth', {
      server_url: servers.oauth!.url,
      auth_type: 'OAUTH',
      auth_performer: 'PER_USER',
    });
    const started = await call('POST', '/api/mcp/oauth/connect', s.adminKey, { server_id: oauth.server_id });
    const landed = new URL(await provider.authorize(started.authorization_url, 'admin'));
    await call('POST', '/api/mcp/oauth/callback', s.adminKey, {
      code: landed.searchParams.get('code'),
      state: landed.searchParams.get('state'),
    });
    expect(names(await toolsOf(oauth.server_id))).toEqual(['add', 'whoami']);

    const passThrough = await create('pass-through', {
      server_url: servers.passThrough!.url,
      auth_type: 'PT_OAUTH',
      auth_performer: 'PER_USER',
    });
    const adminSignIn = await provider.signIn('admin');
    expect(names(await toolsOf(passThrough.server_id, adminSignIn))).toEqual(['add', 'whoami']);

    const mine = await call('GET', '/api/mcp/servers', ann.key);
    expect(
      Object.fromEntries(mine.mcp_servers.map((x: any) => [x.name, x.user_authenticated])),
    ).toMatchObject({ none: true, shared: true, 'per user': true, oauth: false, 'pass-through': false });

    // Remove a server: its tools leave the agent.
    const oauthTools = await toolsOf(oauth.server_id);
    const agent = await call(
      'POST',
      '/api/persona',
      s.adminKey,
      agentBody(oauthTools.tools.map((x: any) => x.id)),
    );
    expect((await call('GET', `/api/persona/${agent.id}`, s.adminKey)).tools).toHaveLength(2);
    await call('DELETE', `/api/admin/mcp/server/${oauth.server_id}`, s.adminKey);
    expect((await call('GET', `/api/persona/${agent.id}`, s.adminKey)).tools).toEqual([]);
    const all = await call('GET', '/api/tool', s.adminKey);
    expect(all.filter((x: any) => x.mcp_server_id === oauth.server_id)).toEqual([]);
  }, 60_000);
});
