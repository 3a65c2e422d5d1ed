/**
 * OAuth pass-through end to end over HTTP: a person signs in through kas's OIDC path with a real ID
 * token from `oidc-provider`, and that very token reaches the OpenAPI service and the MCP server, which
 * verify it against the provider's keys. Without OIDC configured, pass-through is refused with a 400.
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
let mcp: FakeMcpServer;
/** Who the token names, when it is an ID token the provider signed for kas; null otherwise. */
let subjectOf: (headers: IncomingHttpHeaders) => Promise<string | null>;

beforeAll(async () => {
  provider = await startFakeOidcProvider({
    alice: { email: 'alice@corp.example' },
    root: { email: 'root@corp.example' },
  });
  const jwks = createRemoteJWKSet(new URL(`${provider.issuer}/jwks`));
  subjectOf = async (headers) => {
    const token = /^Bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
    if (!token) return null;
    return jwtVerify(token, jwks, { issuer: provider.issuer, audience: provider.clientId }).then(
      ({ payload }) => String(payload.sub),
      () => null,
    );
  };
  [llm, api, mcp] = await Promise.all([
    startFakeOpenAi(),
    startFakeOpenApiService(),
    startFakeMcpServer({ authorize: (h) => subjectOf(h) }),
  ]);
  api.authorize = async (h) => (await subjectOf(h)) !== null;
});
afterAll(async () => {
  await Promise.all([provider, llm, api, mcp].map((x) => x?.close()));
});

const agentBody = (tool_ids: number[]) => agentInput('pass-through', tool_ids);

describe.each(['pglite', 'postgres'] as const)('OAuth pass-through on %s', (db) => {
  let s: TestServer;
  let plain: TestServer;
  beforeAll(async () => {
    [s, plain] = await Promise.all([
      startTestServer({
        db,
        env: {
          KAS_OIDC_ISSUER: provider.issuer,
          KAS_OIDC_AUDIENCE: provider.clientId,
          KAS_OIDC_ADMIN_EMAILS: 'root@corp.example',
          KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
          KAS_LLM_PROVIDER: 'openai',
          KAS_LLM_BASE_URL: llm.baseURL,
        },
      }),
      startTestServer({ db, env: { KAS_OUTBOUND_ALLOWLIST: '127.0.0.1' } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([s?.close(), plain?.close()]);
  });

  it('forwards the signed-in person’s OIDC token to an OpenAPI action and an MCP server', async () => {
    const json = async (res: Response) => {
      const body = await res.json();
      if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
      return body as any;
    };
    const action = await json(
      await s.request('POST', '/api/admin/tool/custom', {
        key: s.adminKey,
        body: { definition: api.spec(), passthrough_auth: true },
      }),
    );
    expect(action.passthrough_auth).toBe(true);
    const server = await json(
      await s.request('POST', '/api/admin/mcp/servers/create', {
        key: s.adminKey,
        body: {
          name: 'Directory',
          server_url: mcp.url,
          transport: 'STREAMABLE_HTTP',
          auth_type: 'PT_OAUTH',
          auth_performer: 'PER_USER',
        },
      }),
    );
    // The admin's API key carries no sign-in token: nothing to list with.
    const noToken = await json(
      await s.request('GET', `/api/admin/mcp/server/${server.server_id}/tools`, { key: s.adminKey }),
    );
    expect(noToken.tools).toEqual([]);
    expect(noToken.message).toContain('did not sign in through OIDC');
    // Signed in through OIDC as an admin, the tools are listed with that token.
    const rootToken = await provider.signIn('root');
    const tools = await json(
      await s.request('GET', `/api/admin/mcp/server/${server.server_id}/tools`, { key: rootToken }),
    );
    const whoami = tools.tools.find((x: any) => x.name === 'whoami');
    expect(whoami).toBeDefined();
    const agent = await json(
      await s.request('POST', '/api/persona', { key: s.adminKey, body: agentBody([action.id, whoami.id]) }),
    );

    const aliceToken = await provider.signIn('alice');
    llm.enqueue(
      {
        toolCalls: [
          { id: 'f', name: 'getForecast', arguments: '{"city":"Lyon"}' },
          { id: 'w', name: 'whoami', arguments: '{}' },
        ],
      },
      { tokens: ['done'] },
    );
    const seen = api.requests.length;
    const lines = await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key: aliceToken,
        body: { message: 'forecast for me', chat_session_info: { persona_id: agent.id } },
      }),
    );
    const deltas = lines.filter((l) => l.obj?.type === 'custom_tool_delta').map((l) => l.obj);
    expect(deltas.find((d) => d.tool_name === 'getForecast')).toMatchObject({ error: null });
    expect(deltas.find((d) => d.tool_name === 'whoami')).toMatchObject({
      data: 'You are alice',
      error: null,
    });
    expect(api.requests.slice(seen).map((r) => r.headers.authorization)).toEqual([`Bearer ${aliceToken}`]);
    expect(mcp.calls.at(-1)).toMatchObject({ tool: 'whoami', who: 'alice' });

    // The same person through an API key has no sign-in token: the tools are skipped with a note.
    const key = await s.createKey('basic', 'alice by key');
    const before = llm.requests.length;
    llm.enqueue({ tokens: ['cannot'] });
    const keyLines = await readAll(
      await s.request('POST', '/api/chat/send-chat-message', {
        key: key.key,
        body: { message: 'forecast for me', chat_session_info: { persona_id: agent.id } },
      }),
    );
    expect(keyLines.some((l) => l.obj?.type === 'custom_tool_start')).toBe(false);
    const system = llm.requests[before]!.messages[0].content;
    expect(system).toContain(
      `The action "${action.name}" is not available: it forwards the user's sign-in token, and this user did not sign in through OIDC.`,
    );
    expect(system).toContain(
      'The tools whoami of MCP server "Directory" are not available: it forwards the user’s sign-in token, and this user did not sign in through OIDC.',
    );
    expect(api.requests.length).toBe(seen + 1);
  }, 60_000);

  it('refuses pass-through with a clear 400 when kas has no OIDC configured', async () => {
    const action = await plain.request('POST', '/api/admin/tool/custom', {
      key: plain.adminKey,
      body: { definition: api.spec(), passthrough_auth: true },
    });
    expect(action.status).toBe(400);
    expect(await action.json()).toMatchObject({
      error_code: 'INVALID_INPUT',
      detail:
        'OAuth pass-through forwards the caller’s OIDC sign-in token, but kas has no OIDC configured (KAS_OIDC_ISSUER)',
    });
    const server = await plain.request('POST', '/api/admin/mcp/servers/create', {
      key: plain.adminKey,
      body: {
        name: 'Directory',
        server_url: mcp.url,
        transport: 'STREAMABLE_HTTP',
        auth_type: 'PT_OAUTH',
        auth_performer: 'PER_USER',
      },
    });
    expect(server.status).toBe(400);
    expect(((await server.json()) as { detail: string }).detail).toContain('kas has no OIDC configured');
  });
});
