/**
 * kas as an MCP server, through the MCP SDK's own client over Streamable HTTP: each role sees only the
 * tools it may use, each tool runs with exactly the caller's access, and a bearer kas credential (API
 * key, personal token) works directly.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOidcProvider, startFakeOidcProvider } from '../fakes/oidc-provider.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { mcpFixture } from './mcp-helpers.ts';

type Json = Record<string, any>;

async function connect(s: TestServer, credential: string): Promise<Client> {
  const client = new Client({ name: 'kas-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${credential}` } },
    }),
  );
  return client;
}

async function call(client: Client, name: string, args: Json): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

describe.each(['pglite', 'postgres'] as const)('MCP over Streamable HTTP on %s', (db) => {
  let s: TestServer;
  let f: Awaited<ReturnType<typeof mcpFixture>>;
  const clients: Client[] = [];
  const open = async (credential: string) => {
    const client = await connect(s, credential);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    s = await startTestServer({ db });
    f = await mcpFixture(s);
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
    await s?.close();
  });

  it('lists the tools each role may use, with their schemas', async () => {
    const names = async (credential: string) =>
      (await (await open(credential)).listTools()).tools.map((t) => t.name).sort();
    expect(await names(s.adminKey)).toEqual(['ask', 'fetch', 'ingest', 'search']);
    expect(await names(f.curatorA)).toEqual(['ask', 'fetch', 'ingest', 'search']);
    expect(await names(f.basicA)).toEqual(['ask', 'fetch', 'search']);
    expect(await names(f.limited)).toEqual(['ask']);
    const tools = (await (await open(s.adminKey)).listTools()).tools;
    const search = tools.find((t) => t.name === 'search')!;
    expect(search.description).toMatch(/search/i);
    expect(search.inputSchema.required).toEqual(['query']);
    expect(search.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === 'ingest')!.inputSchema.required).toEqual(['document']);
  });

  it('search and fetch return only what the caller may see', async () => {
    const member = await open(f.basicA);
    const outsider = await open(f.basicB);
    const found = await call(member, 'search', { query: 'narwhal merger' });
    expect(found.isError).toBeFalsy();
    const results = (found.structuredContent as Json).results as Json[];
    expect(results[0]).toEqual({
      id: f.privateDoc,
      title: 'Merger memo',
      url: 'https://wiki.example/merger',
      text: expect.stringContaining('narwhal'),
    });
    expect(JSON.parse(text(found))).toEqual(found.structuredContent);

    const hidden = await call(outsider, 'search', { query: 'narwhal merger' });
    expect((hidden.structuredContent as Json).results).toEqual([]);
    const publicFound = await call(outsider, 'search', { query: 'vacation days' });
    expect(((publicFound.structuredContent as Json).results as Json[]).map((r) => r.id)).toEqual([
      f.publicDoc,
    ]);

    const fetched = await call(member, 'fetch', { id: f.privateDoc });
    expect(fetched.structuredContent).toMatchObject({
      id: f.privateDoc,
      title: 'Merger memo',
      url: 'https://wiki.example/merger',
      text: expect.stringContaining('the narwhal merger closes in march'),
      metadata: { source_type: 'file', owner: 'legal' },
    });
    const refused = await call(outsider, 'fetch', { id: f.privateDoc });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^DOCUMENT_NOT_FOUND/);
    expect(text(refused)).not.toContain('narwhal');
  });

  it('ask answers with citations through the chat turn, saved in the caller’s history', async () => {
    const client = await open(f.basicA);
    const answered = await call(client, 'ask', { question: 'How many vacation days do employees get?' });
    expect(answered.isError, text(answered)).toBeFalsy();
    const answer = answered.structuredContent as Json;
    expect(answer.answer).toMatch(/25/);
    expect(answer.answer).toMatch(/\[1\]/);
    expect(answer.sources[0]).toMatchObject({ n: 1, id: f.publicDoc, title: 'Vacation policy' });
    expect(text(answered)).toContain('Sources:');
    const history = await (
      await s.request('GET', `/api/chat/get-chat-session/${answer.chat_session_id}`, { key: f.basicA })
    ).json();
    expect(JSON.stringify(history)).toContain('How many vacation days');

    const outsider = await open(f.basicB);
    const secret = (await call(outsider, 'ask', { question: 'When does the narwhal merger close?' }))
      .structuredContent as Json;
    expect(JSON.stringify(secret)).not.toContain(f.privateDoc);
    expect(secret.answer).not.toMatch(/march/i);
  });

  it('ingest runs with the ingestion API’s rules; a limited person has no such tool', async () => {
    const curator = await open(f.curatorA);
    const document = {
      id: 'mcp-note',
      semantic_identifier: 'Note from an agent',
      sections: [{ text: 'the heron project ships in june' }],
    };
    const created = await call(curator, 'ingest', { document, cc_pair_id: f.groupPairId });
    expect(created.isError, text(created)).toBeFalsy();
    expect(created.structuredContent).toEqual({ document_id: 'mcp-note', already_existed: false });
    const again = await call(curator, 'ingest', { document, cc_pair_id: f.groupPairId });
    expect(again.structuredContent).toEqual({ document_id: 'mcp-note', already_existed: true });
    // A curator writes only into pairs they manage (the ingestion API's own pair is admin-only).
    const outside = await call(curator, 'ingest', { document: { ...document, id: 'mcp-elsewhere' } });
    expect(outside.isError).toBe(true);
    expect(text(outside)).toMatch(/^INSUFFICIENT_PERMISSIONS/);

    const limited = await open(f.limited);
    const refused = await call(limited, 'ingest', { document });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/not found/i);
    const searchRefused = await call(limited, 'search', { query: 'vacation' });
    expect(searchRefused.isError).toBe(true);
  });

  it('a bad argument is a tool error naming the field', async () => {
    const client = await open(f.basicA);
    const result = await call(client, 'search', { query: '' });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/query/);
  });

  it('a personal access token works as a bearer credential', async () => {
    const client = await open(f.personToken);
    const found = await call(client, 'search', { query: 'vacation days' });
    expect(((found.structuredContent as Json).results as Json[])[0]?.id).toBe(f.publicDoc);
  });

  it('without a credential: 401 with the challenge naming the resource metadata', async () => {
    const res = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${s.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    const bad = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer svck-nope' },
      body: '{}',
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(
      /^Bearer error="invalid_token", error_description="Invalid API key", resource_metadata="/,
    );
    const get = await fetch(`${s.url}/mcp`, { headers: { authorization: `Bearer ${s.adminKey}` } });
    expect(get.status).toBe(405);
    const notJson = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${s.adminKey}` },
      body: '{"jsonrpc":',
    });
    expect(notJson.status).toBe(422);
    expect(Object.keys((await notJson.json()) as Json).sort()).toEqual(['detail', 'error_code']);
  });
});

describe('MCP protected resource metadata', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('is served at the root and the /mcp path form, naming kas as the authorization server', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
    ]) {
      const res = await fetch(`${s.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(await res.json()).toEqual({
        resource: `${s.url}/mcp`,
        authorization_servers: [s.url],
        scopes_supported: ['search', 'ask', 'ingest'],
        bearer_methods_supported: ['header'],
        resource_name: 'kas',
        resource_documentation: `${s.url}/api/docs`,
      });
    }
  });
});

describe('MCP with the OIDC provider as the authorization server', () => {
  let s: TestServer;
  let idp: FakeOidcProvider;
  beforeAll(async () => {
    idp = await startFakeOidcProvider({ ann: { email: 'ann@corp.example' } });
    s = await startTestServer({
      env: {
        KAS_OIDC_ISSUER: idp.issuer,
        KAS_OIDC_AUDIENCE: idp.clientId,
        KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
        KAS_MCP_AUTHORIZATION_SERVER: 'oidc',
      },
    });
  });
  afterAll(async () => {
    await s?.close();
    await idp?.close();
  });

  it('names the issuer in the metadata, serves no authorization server of its own, and takes its tokens', async () => {
    const metadata = (await (
      await fetch(`${s.url}/.well-known/oauth-protected-resource/mcp`)
    ).json()) as Json;
    expect(metadata.authorization_servers).toEqual([idp.issuer]);
    expect((await fetch(`${s.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
    expect((await fetch(`${s.url}/register`, { method: 'POST' })).status).toBe(404);
    const client = await connect(s, await idp.signIn('ann'));
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['ask', 'fetch', 'search']);
    await client.close();
  });
});
