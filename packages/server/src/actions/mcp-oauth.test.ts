import type { IncomingHttpHeaders } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMcpServer, startFakeMcpServer } from '../../../../test/fakes/mcp-server.ts';
import { type FakeOidcProvider, startFakeOidcProvider } from '../../../../test/fakes/oidc-provider.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { answerOf, objs, streamAll } from '../chat/chat.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

let llm: FakeLlmServer;
let provider: FakeOidcProvider;
/** Announces its protected-resource metadata in the 401's WWW-Authenticate. */
let challenged: FakeMcpServer;
/** Publishes it only at the well-known URL. */
let quiet: FakeMcpServer;
let alice: { key: string; user_id: string };
let bob: { key: string; user_id: string };
/** Access-token lifetime the provider gives (seconds), read when a token is issued. */
let ttl = 3600;
/** Tokens the MCP servers refuse from now on, as if revoked. */
const revoked = new Set<string>();
const indicators: string[] = [];

/** A bearer-token check as a real resource server does it: JWT from the provider's JWKS, audience = this server. */
function verifier(issuer: string, audience: () => string) {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  return async (headers: IncomingHttpHeaders) => {
    const token = /^Bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
    if (!token || revoked.has(token)) return null;
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer, audience: audience() });
      return String(payload.sub);
    } catch {
      return null;
    }
  };
}

const metadataPath = '/.well-known/oauth-protected-resource/mcp';

beforeAll(async () => {
  provider = await startFakeOidcProvider(
    { alice: { email: 'alice@example.com' }, bob: { email: 'bob@example.com' } },
    { registration: true, resource: { indicators, scope: 'mcp:tools', accessTokenTtl: () => ttl } },
  );
  const metadata = (url: string) => ({
    resource: url,
    authorization_servers: [provider.issuer],
    scopes_supported: ['mcp:tools'],
  });
  [llm, challenged, quiet] = await Promise.all([
    startFakeOpenAi(),
    startFakeMcpServer({
      authorize: verifier(provider.issuer, () => challenged.url),
      challenge: (url) => `Bearer resource_metadata="${new URL(metadataPath, url)}"`,
      routes: { [metadataPath]: metadata },
    }),
    startFakeMcpServer({
      authorize: verifier(provider.issuer, () => quiet.url),
      routes: { [metadataPath]: metadata },
    }),
  ]);
  indicators.push(challenged.url, quiet.url);
});
afterAll(async () => {
  await Promise.all([llm, challenged, quiet, provider].map((s) => s?.close()));
});
const t = useTestRuntime(() => actionsEnv(llm.baseURL));
beforeAll(async () => {
  alice = await t.createKey('basic', 'alice');
  bob = await t.createKey('basic', 'bob');
});

/** The user's whole connection: connect → the browser at the provider → callback. */
async function connect(key: string, serverId: number, login: string) {
  const caller = t.caller(key);
  const started = await caller.mcp.oauthConnect({ server_id: serverId });
  expect(started.status).toBe('authorization_required');
  const landed = new URL(await provider.authorize(started.authorization_url!, login));
  expect(`${landed.origin}${landed.pathname}`).toBe(started.redirect_uri);
  expect(landed.searchParams.get('state')).toBe(started.state);
  return {
    started,
    done: await caller.mcp.oauthCallback({
      code: landed.searchParams.get('code')!,
      state: landed.searchParams.get('state')!,
    }),
  };
}

const lastBearer = (server: FakeMcpServer) =>
  String(server.requests.at(-1)?.authorization ?? '').replace(/^Bearer /, '');

describe('MCP servers with per-user OAuth', () => {
  it('discovers, registers kas, connects each user on their own, refreshes on expiry and after a 401', async () => {
    const admin = t.caller(t.adminKey);
    const server = await admin.mcp.create({
      name: 'Notes',
      server_url: challenged.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'OAUTH',
      auth_performer: 'PER_USER',
    });
    expect(server.no_user_authentication_required).toBe(false);
    // Nobody is connected yet: listing says so, and alice's list shows her as not authenticated.
    const before = await admin.mcp.tools({ server_id: server.server_id });
    expect(before.tools).toEqual([]);
    expect(before.message).toContain('has not connected their account yet');
    const listedForAlice = await t.caller(alice.key).mcp.listForUser({});
    expect(listedForAlice.mcp_servers.find((s) => s.id === server.server_id)).toMatchObject({
      auth_type: 'OAUTH',
      user_authenticated: false,
    });

    // The admin connects (to list the tools), then alice: one dynamic registration serves both.
    const adminConnection = await connect(t.adminKey, server.server_id, 'alice');
    const authUrl = new URL(adminConnection.started.authorization_url!);
    expect(authUrl.origin).toBe(provider.issuer);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(authUrl.searchParams.get('resource')).toBe(challenged.url);
    expect(authUrl.searchParams.get('scope')).toBe('mcp:tools');
    expect(adminConnection.started.redirect_uri).toMatch(/\/mcp\/oauth\/callback$/);
    expect(adminConnection.done).toMatchObject({ success: true, server_id: server.server_id });
    const listed = await admin.mcp.tools({ server_id: server.server_id });
    expect(listed.tools.map((x) => x.name)).toEqual(['add', 'whoami']);
    const whoami = listed.tools.find((x) => x.name === 'whoami')!;

    ttl = 64; // expires 64 s after issue: within the one-minute refresh margin after 4 s
    const aliceConnection = await connect(alice.key, server.server_id, 'alice');
    expect(new URL(aliceConnection.started.authorization_url!).searchParams.get('client_id')).toBe(
      authUrl.searchParams.get('client_id'),
    );
    const connectedAt = Date.now();
    expect(
      (await t.caller(alice.key).mcp.listForUser({})).mcp_servers.find((s) => s.id === server.server_id),
    ).toMatchObject({ user_authenticated: true });
    expect(await t.caller(alice.key).mcp.oauthConnect({ server_id: server.server_id })).toMatchObject({
      status: 'already_authenticated',
      authorization_url: null,
    });
    // Tokens are stored encrypted: nothing readable in the table (no JWT — `header.payload` cannot occur in
    // base64url ciphertext, which has no dot — and no JSON field name; a bare "eyJ" can, by chance).
    const stored = await t.deps.db.selectFrom('mcp_user_configs').select('config_enc').execute();
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.map((r) => r.config_enc).join()).not.toMatch(/eyJ[\w-]+\.eyJ|access_token/);

    const agent = await admin.personas.create(agentInput('notes', [whoami.id]));
    const ask = async (key: string) => {
      llm.enqueue({ toolCalls: [{ id: 'w', name: 'whoami', arguments: '{}' }] }, { tokens: ['ok'] });
      const lines = await streamAll(t.caller(key), {
        message: 'who am I',
        chat_session_info: { persona_id: agent.id },
      });
      expect(answerOf(lines)).toBe('ok');
      return objs(lines).find((o) => o.type === 'custom_tool_delta');
    };
    const refreshesBefore = provider.grants.refresh_token ?? 0;
    expect(await ask(alice.key)).toMatchObject({ data: 'You are alice', error: null });
    const firstToken = lastBearer(challenged);

    // Expiry: once inside the refresh margin the token is refreshed before use.
    await new Promise((r) => setTimeout(r, Math.max(0, connectedAt + 4500 - Date.now())));
    ttl = 3600; // the refreshed token lasts: only a 401 can make kas refresh it again
    expect(await ask(alice.key)).toMatchObject({ data: 'You are alice', error: null });
    expect(provider.grants.refresh_token).toBe(refreshesBefore + 1);
    const secondToken = lastBearer(challenged);
    expect(secondToken).not.toBe(firstToken);

    // A 401 during a call: refreshed once, and the call goes through.
    revoked.add(secondToken);
    expect(await ask(alice.key)).toMatchObject({ data: 'You are alice', error: null });
    expect(provider.grants.refresh_token).toBe(refreshesBefore + 2);
    expect(lastBearer(challenged)).not.toBe(secondToken);
    expect(challenged.calls.at(-1)).toMatchObject({ tool: 'whoami', who: 'alice' });

    // Bob has not connected: the tool is skipped with a note to the model, and nothing reaches the server.
    const calls = challenged.calls.length;
    const at = llm.requests.length;
    llm.enqueue({ tokens: ['cannot'] });
    const bobLines = await streamAll(t.caller(bob.key), {
      message: 'who am I',
      chat_session_info: { persona_id: agent.id },
    });
    expect(objs(bobLines).some((o) => o.type === 'custom_tool_start')).toBe(false);
    expect(llm.requests[at]!.messages[0].content).toContain(
      'The tools whoami of MCP server "Notes" are not available: the user has not connected their account yet',
    );
    expect(challenged.calls.length).toBe(calls);

    // Bob's own connection is his: the server sees bob, never alice's token.
    await connect(bob.key, server.server_id, 'bob');
    expect(await ask(bob.key)).toMatchObject({ data: 'You are bob' });
    expect(await ask(alice.key)).toMatchObject({ data: 'You are alice' });

    // Disconnecting forgets the tokens.
    await t.caller(alice.key).mcp.deleteCredentials({ server_id: server.server_id });
    expect(
      (await t.caller(alice.key).mcp.listForUser({})).mcp_servers.find((s) => s.id === server.server_id),
    ).toMatchObject({ user_authenticated: false });
  }, 60_000);

  it('uses the admin’s client id without registering, finds the metadata at the well-known URL', async () => {
    const registered = (await (
      await fetch(`${provider.issuer}/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          redirect_uris: [`http://localhost:${t.config.PORT}/mcp/oauth/callback`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
        }),
      })
    ).json()) as { client_id: string; client_secret: string };
    const admin = t.caller(t.adminKey);
    const server = await admin.mcp.create({
      name: 'Quiet',
      server_url: quiet.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'OAUTH',
      auth_performer: 'PER_USER',
      oauth_client_id: registered.client_id,
      oauth_client_secret: registered.client_secret,
    });
    const { started } = await connect(alice.key, server.server_id, 'alice');
    expect(new URL(started.authorization_url!).searchParams.get('client_id')).toBe(registered.client_id);
    const listed = await t.caller(t.adminKey).mcp.tools({ server_id: server.server_id });
    expect(listed.message).toContain('has not connected'); // the admin is another user
    expect(
      (await t.caller(alice.key).mcp.listForUser({})).mcp_servers.find((s) => s.id === server.server_id),
    ).toMatchObject({ user_authenticated: true });
  }, 30_000);

  it('refuses a replayed, foreign or unknown state, and servers that do not use OAuth', async () => {
    const admin = t.caller(t.adminKey);
    const server = await admin.mcp.create({
      name: 'States',
      server_url: challenged.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'OAUTH',
      auth_performer: 'PER_USER',
    });
    const started = await t.caller(alice.key).mcp.oauthConnect({ server_id: server.server_id });
    const landed = new URL(await provider.authorize(started.authorization_url!, 'alice'));
    const input = { code: landed.searchParams.get('code')!, state: started.state! };
    expect(await errorOf(t.caller(bob.key).mcp.oauthCallback(input))).toMatchObject({
      status: 400,
      detail: 'This OAuth state was issued to another user',
    });
    // The state was consumed by bob's attempt: alice starts again.
    expect(await errorOf(t.caller(alice.key).mcp.oauthCallback(input))).toMatchObject({
      status: 400,
      detail: 'Unknown or expired OAuth state: start again with /api/mcp/oauth/connect',
    });
    const again = await t.caller(alice.key).mcp.oauthConnect({ server_id: server.server_id });
    expect(
      await errorOf(t.caller(alice.key).mcp.oauthCallback({ code: 'not-a-code', state: again.state! })),
    ).toMatchObject({ status: 400, detail: 'The authorization server refused the code (invalid_grant)' });

    const open = await admin.mcp.create({
      name: 'Open',
      server_url: quiet.url,
      transport: 'STREAMABLE_HTTP',
      auth_type: 'NONE',
      auth_performer: 'ADMIN',
    });
    expect(await errorOf(t.caller(alice.key).mcp.oauthConnect({ server_id: open.server_id }))).toMatchObject({
      status: 400,
      detail: `MCP server ${open.server_id} does not use OAuth (auth NONE): nothing to connect`,
    });
    expect(await errorOf(t.caller(alice.key).mcp.oauthConnect({ server_id: 999999 }))).toMatchObject({
      status: 404,
      error_code: 'MCP_SERVER_NOT_FOUND',
    });
  }, 30_000);
});
