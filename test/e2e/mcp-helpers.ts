import { identityService } from '@kas/server';
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'vitest';
import type { TestServer } from '../harness/server.ts';

type Json = Record<string, any>;

/**
 * What the MCP tests share: a public document, a document of a private pair of group A, API keys of
 * each role (`basicA` and `curatorA` in group A, `basicB` not), and a person with a personal token.
 */
export async function mcpFixture(s: TestServer) {
  async function ok(method: string, path: string, body?: unknown): Promise<Json> {
    const res = await s.request(method, path, { key: s.adminKey, body });
    const text = await res.text();
    expect(res.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    return text ? (JSON.parse(text) as Json) : {};
  }
  /** A person of `role` with a personal access token. */
  async function person(email: string, role: string) {
    const [user] = (await ok('PUT', '/api/manage/admin/users', {
      emails: [email],
      role,
    })) as unknown as Json[];
    const userId = (user!.id ?? user!.user_id) as string;
    const token = (
      await identityService.createPersonalToken({
        ctx: s.running.runtime.deps,
        userId,
        input: { name: 'mcp' },
      })
    ).token!;
    return { userId, token, email };
  }
  const people = {
    pat: await person('pat@corp.example', 'basic'),
    cora: await person('cora@corp.example', 'curator'),
    lim: await person('lim@corp.example', 'limited'),
  };
  const made = {
    curatorA: await s.createKey('curator', 'curator A'),
    basicA: await s.createKey('basic', 'basic A'),
    basicB: await s.createKey('basic', 'basic B'),
    limited: await s.createKey('limited', 'limited'),
  };
  const groupA = await ok('POST', '/api/manage/admin/user-group', {
    name: 'group A',
    user_ids: [made.curatorA.user_id, made.basicA.user_id, people.cora.userId],
  });
  for (const curator of [made.curatorA.user_id, people.cora.userId])
    await ok('POST', `/api/manage/admin/user-group/${groupA.id}/set-curator`, {
      user_id: curator,
      is_curator: true,
    });
  // A private pair of group A (a file connector; its file is never indexed here: no worker).
  const form = new FormData();
  form.append('files', new Blob(['placeholder']), 'placeholder.txt');
  const upload = (await (
    await fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}` },
      body: form,
    })
  ).json()) as Json;
  const access = { access_type: 'private', groups: [groupA.id] };
  const connector = await ok('POST', '/api/manage/admin/connector', {
    name: 'group A files',
    source: 'file',
    input_type: 'load_state',
    connector_specific_config: { file_locations: upload.file_paths, file_names: upload.file_names },
    ...access,
  });
  const credential = await ok('POST', '/api/manage/credential', { source: 'file', credential_json: {} });
  const groupPairId = (
    await ok('PUT', `/api/manage/connector/${connector.id}/credential/${credential.id}`, {
      name: 'group A files',
      ...access,
    })
  ).data as number;
  const privateDoc = 'merger-memo';
  await ok('POST', '/api/svc-api/ingestion', {
    cc_pair_id: groupPairId,
    document: {
      id: privateDoc,
      semantic_identifier: 'Merger memo',
      metadata: { owner: 'legal' },
      sections: [
        { text: 'Confidential: the narwhal merger closes in march.', link: 'https://wiki.example/merger' },
      ],
    },
  });
  const publicDoc = 'kb-hr';
  await ok('POST', '/api/svc-api/ingestion', {
    document: {
      id: publicDoc,
      semantic_identifier: 'Vacation policy',
      sections: [
        {
          text: 'Employees receive 25 vacation days per year. Unused vacation days expire in March.',
          link: 'https://wiki.example/vacation',
        },
      ],
    },
  });
  return {
    curatorA: made.curatorA.key,
    basicA: made.basicA.key,
    basicB: made.basicB.key,
    limited: made.limited.key,
    personToken: people.pat.token,
    people,
    groupPairId,
    privateDoc,
    publicDoc,
    ok,
  };
}

/**
 * An MCP client's OAuth side, as an agent keeps it (the SDK's `OAuthClientProvider`), with the person's
 * browser step scripted: `approve(token)` opens the authorization URL the client was sent to, reads the
 * consent page and submits it with the person's personal access token, as a person would.
 */
export class ScriptedOAuthClient implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  private client: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  readonly redirectUrl = 'http://127.0.0.1:1/callback';
  readonly name: string;
  readonly scope: string | undefined;
  constructor(name = 'Test agent', scope?: string) {
    this.name = name;
    this.scope = scope;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  /** A client asking for fewer scopes than the server offers (the SDK asks for all it advertises). */
  redirectToAuthorization(url: URL) {
    if (this.scope) url.searchParams.set('scope', this.scope);
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }

  /** The consent page for the pending authorization, as the browser gets it. */
  async consentPage(): Promise<{ status: number; html: string; request: string }> {
    const res = await fetch(this.authorizationUrl!, { redirect: 'manual' });
    const html = await res.text();
    const request = /name="request" value="([^"]+)"/.exec(html)?.[1] ?? '';
    return { status: res.status, html, request: request.replace(/&quot;/g, '"').replace(/&amp;/g, '&') };
  }

  /** Submits the consent form; resolves the redirect back to the client (its code or error). */
  async submit(
    request: string,
    token: string,
    decision = 'approve',
  ): Promise<{ status: number; location: URL | null; html: string }> {
    const action = new URL('/oauth/consent', this.authorizationUrl!);
    const res = await fetch(action, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request, token, decision }),
    });
    const location = res.headers.get('location');
    return { status: res.status, location: location ? new URL(location) : null, html: await res.text() };
  }

  /** The whole browser step: consent approved with `token`; returns the code the client receives. */
  async approve(token: string): Promise<string> {
    const page = await this.consentPage();
    expect(page.status, page.html).toBe(200);
    const answer = await this.submit(page.request, token);
    expect(answer.status, answer.html).toBe(302);
    expect(answer.location!.searchParams.get('state')).toBe(this.authorizationUrl!.searchParams.get('state'));
    // RFC 9207: the issuer comes back with the code, as the metadata names it.
    expect(answer.location!.searchParams.get('iss')).toBe(this.authorizationUrl!.origin);
    return answer.location!.searchParams.get('code')!;
  }
}

/**
 * Connects an MCP client that has only the server URL: the first attempt discovers the metadata,
 * registers and sends the person to the consent page (approved here with `token`), then the code is
 * exchanged and the client connects with its access token.
 */
export async function connectWithOAuth(
  url: string,
  provider: ScriptedOAuthClient,
  token: string,
): Promise<Client> {
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const probe = new Client({ name: provider.name, version: '1.0.0' });
  await expect(probe.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const code = await provider.approve(token);
  await first.finishAuth(code);
  const client = new Client({ name: provider.name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  return client;
}
