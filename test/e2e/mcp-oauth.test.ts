/**
 * kas as the OAuth 2.1 authorization server of its MCP endpoint, driven by the MCP SDK's own client
 * and its OAuth client provider: from nothing but the URL it discovers the metadata, registers, sends
 * the person to the consent page (scripted: a person signs in with their personal token), exchanges the
 * code with PKCE, and then calls the tools as that person and only within what they may do.
 */
import { createServer } from 'node:net';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOidcProvider, startFakeOidcProvider } from '../fakes/oidc-provider.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { connectWithOAuth, mcpFixture, ScriptedOAuthClient } from './mcp-helpers.ts';

type Json = Record<string, any>;

const call = async (client: Client, name: string, args: Json) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (result: CallToolResult) =>
  result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

function rpc(url: string, token: string | undefined, method = 'tools/list', params: Json = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

describe.each(['pglite', 'postgres'] as const)('MCP OAuth on %s', (db) => {
  let s: TestServer;
  let f: Awaited<ReturnType<typeof mcpFixture>>;
  let mcpUrl: string;
  const clients: Client[] = [];
  const signIn = async (token: string, provider = new ScriptedOAuthClient()) => {
    const client = await connectWithOAuth(mcpUrl, provider, token);
    clients.push(client);
    return { client, provider };
  };
  const sql = () => s.running.runtime.deps.db;

  beforeAll(async () => {
    s = await startTestServer({ db });
    f = await mcpFixture(s);
    mcpUrl = `${s.url}/mcp`;
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await s?.close();
  });

  it('serves authorization server metadata (RFC 8414): PKCE S256 only, registration, revocation', async () => {
    const res = await fetch(`${s.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      issuer: s.url,
      authorization_endpoint: `${s.url}/authorize`,
      token_endpoint: `${s.url}/token`,
      registration_endpoint: `${s.url}/register`,
      revocation_endpoint: `${s.url}/revoke`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      scopes_supported: ['search', 'ask', 'ingest'],
    });
  });

  it('a client with only the URL signs a person in and calls every tool as them', async () => {
    const provider = new ScriptedOAuthClient('Claude');
    const { client } = await signIn(f.people.cora.token, provider);
    expect(provider.authorizationUrl!.searchParams.get('code_challenge_method')).toBe('S256');
    expect(provider.authorizationUrl!.searchParams.get('resource')).toBe(mcpUrl);
    const tokens = provider.tokens()!;
    expect(tokens.access_token).toMatch(/^kmat-/);
    expect(tokens.refresh_token).toMatch(/^kmrt-/);
    expect(tokens.scope).toBe('search ask ingest');
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      'ask',
      'fetch',
      'ingest',
      'search',
    ]);

    const found = await call(client, 'search', { query: 'narwhal merger' });
    expect(((found.structuredContent as Json).results as Json[]).map((r) => r.id)).toEqual([f.privateDoc]);
    const fetched = await call(client, 'fetch', { id: f.privateDoc });
    expect((fetched.structuredContent as Json).text).toContain('narwhal');
    const answered = await call(client, 'ask', { question: 'How many vacation days do employees get?' });
    expect((answered.structuredContent as Json).sources[0]).toMatchObject({ id: f.publicDoc });
    const ingested = await call(client, 'ingest', {
      cc_pair_id: f.groupPairId,
      document: {
        id: 'oauth-note',
        semantic_identifier: 'OAuth note',
        sections: [{ text: 'egrets nest in may' }],
      },
    });
    expect(ingested.structuredContent, text(ingested)).toEqual({
      document_id: 'oauth-note',
      already_existed: false,
    });

    // Tokens are stored only as hashes.
    const stored = await sql().selectFrom('oauth_tokens').select('token_hash').execute();
    expect(stored.map((r) => r.token_hash)).not.toContain(tokens.access_token);
    expect(JSON.stringify(stored)).not.toContain('kmat-');
  });

  it("person A's token never returns what A cannot see, and a limited person gets only ask", async () => {
    const { client } = await signIn(f.people.pat.token);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['ask', 'fetch', 'search']);
    const hidden = await call(client, 'search', { query: 'narwhal merger' });
    expect((hidden.structuredContent as Json).results).toEqual([]);
    const refused = await call(client, 'fetch', { id: f.privateDoc });
    expect(refused.isError).toBe(true);
    expect(text(refused)).not.toContain('narwhal');

    const limited = await signIn(f.people.lim.token, new ScriptedOAuthClient('Limited agent'));
    expect(limited.provider.tokens()!.scope).toBe('ask');
    expect((await limited.client.listTools()).tools.map((t) => t.name)).toEqual(['ask']);
    const ingest = await call(limited.client, 'ingest', {
      document: { semantic_identifier: 'x', sections: [{ text: 'y' }] },
    });
    expect(ingest.isError).toBe(true);
  });

  it('a client asking for fewer scopes gets only those tools', async () => {
    const { client, provider } = await signIn(
      f.people.cora.token,
      new ScriptedOAuthClient('Reader', 'search'),
    );
    expect(provider.tokens()!.scope).toBe('search');
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['fetch', 'search']);
  });

  it('the person lists and revokes the grant; the client is refused on its next call', async () => {
    const provider = new ScriptedOAuthClient('Revoked agent');
    const { client } = await signIn(f.people.pat.token, provider);
    const listed = (await (
      await s.request('GET', '/api/user/oauth-grants', { key: f.people.pat.token })
    ).json()) as Json[];
    const grant = listed.find((g) => g.client_name === 'Revoked agent')!;
    expect(grant).toMatchObject({
      redirect_hosts: ['127.0.0.1:1'],
      email: 'pat@corp.example',
      scopes: ['search', 'ask'],
      resource: mcpUrl,
    });
    // Another person cannot see or revoke it; an admin sees everyone's.
    const others = (await (
      await s.request('GET', '/api/user/oauth-grants', { key: f.people.cora.token })
    ).json()) as Json[];
    expect(others.map((g) => g.id)).not.toContain(grant.id);
    expect(
      (await s.request('DELETE', `/api/user/oauth-grants/${grant.id}`, { key: f.people.cora.token })).status,
    ).toBe(404);
    const all = (await (
      await s.request('GET', '/api/admin/oauth-grants', { key: s.adminKey })
    ).json()) as Json[];
    expect(all.map((g) => g.id)).toContain(grant.id);
    expect((await s.request('GET', '/api/admin/oauth-grants', { key: f.people.pat.token })).status).toBe(403);

    expect(
      (await s.request('DELETE', `/api/user/oauth-grants/${grant.id}`, { key: f.people.pat.token })).status,
    ).toBe(204);
    const access = provider.tokens()!.access_token;
    const res = await rpc(mcpUrl, access);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_token".*resource_metadata=/);
    // The client's own recovery (refresh) fails too: the refresh token went with the grant.
    await expect(client.listTools()).rejects.toThrow();
  });

  it('an admin revokes a grant; a deactivated person’s tokens stop on the next request', async () => {
    const admin = await signIn(f.people.cora.token, new ScriptedOAuthClient('Admin-revoked'));
    const grant = (
      (await (await s.request('GET', '/api/admin/oauth-grants', { key: s.adminKey })).json()) as Json[]
    ).find((g) => g.client_name === 'Admin-revoked')!;
    expect(
      (await s.request('DELETE', `/api/admin/oauth-grants/${grant.id}`, { key: s.adminKey })).status,
    ).toBe(204);
    expect((await rpc(mcpUrl, admin.provider.tokens()!.access_token)).status).toBe(401);

    const { provider } = await signIn(f.people.lim.token, new ScriptedOAuthClient('Deactivated'));
    const access = provider.tokens()!.access_token;
    expect((await rpc(mcpUrl, access)).status).toBe(200);
    const off = await s.request('PATCH', '/api/manage/admin/deactivate-user', {
      key: s.adminKey,
      body: { user_email: 'lim@corp.example' },
    });
    expect(off.status, await off.text()).toBe(200);
    const refused = await rpc(mcpUrl, access);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as Json).detail).toMatch(/deactivated/);
    await s.request('PATCH', '/api/manage/admin/activate-user', {
      key: s.adminKey,
      body: { user_email: 'lim@corp.example' },
    });
  });

  it('an expired access token is refused; the client refreshes (rotation) and a replayed refresh token ends the grant', async () => {
    const provider = new ScriptedOAuthClient('Refreshing');
    const { client } = await signIn(f.people.pat.token, provider);
    const first = provider.tokens()!;
    await sql()
      .updateTable('oauth_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('kind', '=', 'access')
      .execute();
    const expired = await rpc(mcpUrl, first.access_token);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as Json).detail).toMatch(/expired/);
    // The SDK client answers the 401 by refreshing, and the call goes through with the new token.
    expect((await client.listTools()).tools.length).toBe(3);
    const second = provider.tokens()!;
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    // The spent refresh token presented again: refused, and the grant (with the new tokens) is gone.
    const replay = await fetch(`${s.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: first.refresh_token!,
        client_id: provider.clientInformation()!.client_id,
      }),
    });
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as Json).error).toBe('invalid_grant');
    expect((await rpc(mcpUrl, second.access_token)).status).toBe(401);
  });

  it('a token is refused for another resource and on the REST API', async () => {
    const { provider } = await signIn(f.people.pat.token, new ScriptedOAuthClient('Elsewhere'));
    const access = provider.tokens()!.access_token;
    // The same server under another name is another resource (as a token for another server would be).
    const other = mcpUrl.replace('127.0.0.1', 'localhost');
    const refused = await rpc(other, access);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as Json).detail).toMatch(/issued for/);
    expect((await s.request('GET', '/api/me', { key: access })).status).toBe(401);
  });

  it('refuses an unregistered or port-shifted redirect URI, a wrong PKCE verifier, and an API key at the consent page', async () => {
    const provider = new ScriptedOAuthClient('Strict');
    await expect(connectWithOAuth(mcpUrl, provider, f.basicA)).rejects.toThrow();
    // An API key is not a person: the consent page is shown again with the reason.
    const page = await provider.consentPage();
    expect(page.html).toContain('Strict');
    expect(page.html).toContain('127.0.0.1:1');
    const byKey = await provider.submit(page.request, f.basicA);
    expect(byKey.status).toBe(403);
    expect(byKey.html).toMatch(/not with an API key/);
    const badToken = await provider.submit(page.request, 'kpat-wrong');
    expect(badToken.status).toBe(401);
    const denied = await provider.submit(page.request, '', 'deny');
    expect(denied.location!.searchParams.get('error')).toBe('access_denied');

    const shifted = new URL(provider.authorizationUrl!);
    shifted.searchParams.set('redirect_uri', 'http://127.0.0.1:2/callback');
    expect((await fetch(shifted, { redirect: 'manual' })).status).toBe(400);

    const approved = await provider.submit(page.request, f.people.pat.token);
    const code = approved.location!.searchParams.get('code')!;
    const exchange = await fetch(`${s.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: 'x'.repeat(50),
        redirect_uri: provider.redirectUrl,
        client_id: provider.clientInformation()!.client_id,
      }),
    });
    expect(exchange.status).toBe(400);
    expect(((await exchange.json()) as Json).error).toBe('invalid_grant');
  });
});

describe('MCP OAuth consent through the OIDC provider', () => {
  let s: TestServer;
  let idp: FakeOidcProvider;
  beforeAll(async () => {
    const port = await freePort();
    idp = await startFakeOidcProvider(
      { ann: { email: 'ann@corp.example' } },
      { redirectUris: [`http://127.0.0.1:${port}/oauth/consent/oidc/callback`] },
    );
    s = await startTestServer({
      env: {
        PORT: String(port),
        KAS_OIDC_ISSUER: idp.issuer,
        KAS_OIDC_AUDIENCE: idp.clientId,
        KAS_OIDC_CLIENT_SECRET: idp.clientSecret,
        KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
      },
    });
  });
  afterAll(async () => {
    await s?.close();
    await idp?.close();
  });

  it('a person signs in at the provider on the consent page and the client gets its tokens', async () => {
    const provider = new ScriptedOAuthClient('Cursor');
    const client = new Client({ name: 'Cursor', version: '1.0.0' });
    const first = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const page = await provider.consentPage();
    expect(page.html).toContain('Sign in with your organisation');
    const start = new URL('/oauth/consent/oidc', s.url);
    start.searchParams.set('request', page.request);
    const toProvider = await fetch(start, { redirect: 'manual' });
    expect(toProvider.status).toBe(302);
    const back = new URL(await idp.authorize(toProvider.headers.get('location')!, 'ann'));
    expect(back.pathname).toBe('/oauth/consent/oidc/callback');
    const answer = await fetch(back, { redirect: 'manual' });
    expect(answer.status, await answer.clone().text()).toBe(302);
    const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
    await first.finishAuth(code);
    const signedIn = new Client({ name: 'Cursor', version: '1.0.0' });
    await signedIn.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { authProvider: provider }),
    );
    expect((await signedIn.listTools()).tools.map((t) => t.name).sort()).toEqual(['ask', 'fetch', 'search']);
    const grants = (await (
      await s.request('GET', '/api/admin/oauth-grants', { key: s.adminKey })
    ).json()) as Json[];
    expect(grants[0]).toMatchObject({ client_name: 'Cursor', email: 'ann@corp.example' });
    await signedIn.close();
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
