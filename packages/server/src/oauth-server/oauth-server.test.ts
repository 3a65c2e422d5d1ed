import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authenticate } from '../auth/authenticate.ts';
import { hashCredential } from '../auth/credential.ts';
import * as identityService from '../identity/identity.service.ts';
import { toolsFor } from '../mcp/mcp.service.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as usersService from '../users/users.service.ts';
import { OAuthProtocolError } from './oauth-server.schemas.ts';
import * as oauthServerService from './oauth-server.service.ts';

const t = useTestRuntime();
const RESOURCE = 'https://kas.example.org/mcp';

let n = 0;
async function signedIn(role: 'limited' | 'basic' | 'curator' | 'admin') {
  n += 1;
  const user = await usersService.createPerson({ ctx: t.deps, email: `oauth${n}@example.com`, role });
  const { token } = await identityService.createPersonalToken({
    ctx: t.deps,
    userId: user.id,
    input: { name: 'x' },
  });
  return { user, actor: await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` }) };
}

async function client(redirect = 'http://127.0.0.1:7777/cb') {
  return oauthServerService.registerClient({
    ctx: t.deps,
    client: {
      client_id: `c-${randomBytes(4).toString('hex')}`,
      client_name: 'Agent',
      redirect_uris: [redirect],
    },
  });
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

async function oauthError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OAuthProtocolError) return error.oauth_error;
    throw error;
  }
  throw new Error('expected an OAuth error');
}

async function tokensFor(role: 'limited' | 'basic' | 'curator' | 'admin', scopes: string[] = []) {
  const person = await signedIn(role);
  const registered = await client();
  const { challenge } = pkce();
  const { code } = await oauthServerService.approve({
    ctx: { ...t.deps, actor: person.actor },
    request: {
      client_id: registered.client_id,
      redirect_uri: registered.redirect_uris[0]!,
      code_challenge: challenge,
      scopes,
      resource: RESOURCE,
    },
  });
  const tokens = await oauthServerService.exchangeCode({
    ctx: t.deps,
    clientId: registered.client_id,
    code,
    redirectUri: registered.redirect_uris[0],
    resource: RESOURCE,
  });
  return { ...person, client: registered, tokens };
}

describe('OAuth authorization server', () => {
  it('registers only safe redirect URIs', async () => {
    for (const uri of ['http://evil.example/cb', 'javascript:alert(1)', 'https://a.example/cb#frag'])
      expect(await oauthError(client(uri))).toBe('invalid_redirect_uri');
    for (const uri of [
      'https://claude.ai/api/mcp/auth_callback',
      'http://localhost:3000/cb',
      'cursor://anysphere/cb',
    ])
      expect((await client(uri)).redirect_uris).toEqual([uri]);
  });

  it('forgets registrations no person approved after a day', async () => {
    const unused = await client();
    const { client: approved } = await tokensFor('basic');
    await t.deps.db
      .updateTable('oauth_clients')
      .set({ created_at: new Date(Date.now() - 2 * 86_400_000) })
      .where('client_id', 'in', [unused.client_id, approved.client_id])
      .execute();
    await client();
    expect(await oauthServerService.getClient({ ctx: t.deps, clientId: unused.client_id })).toBeUndefined();
    expect(await oauthServerService.getClient({ ctx: t.deps, clientId: approved.client_id })).toMatchObject({
      client_name: 'Agent',
    });
  });

  it('grants scopes never above the role; a limited person only ask', async () => {
    expect((await tokensFor('basic')).tokens.scope).toBe('search ask');
    expect((await tokensFor('curator', ['ingest', 'search'])).tokens.scope).toBe('search ingest');
    expect((await tokensFor('limited', ['search', 'ask', 'ingest'])).tokens.scope).toBe('ask');
    expect(await oauthError(tokensFor('limited', ['ingest']))).toBe('invalid_scope');
  });

  it('refuses an API key at approval', async () => {
    const { key } = await t.createKey('admin');
    const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${key}` });
    const registered = await client();
    const error = await errorOf(
      oauthServerService.approve({
        ctx: { ...t.deps, actor },
        request: {
          client_id: registered.client_id,
          redirect_uri: registered.redirect_uris[0]!,
          code_challenge: 'x',
          scopes: [],
          resource: RESOURCE,
        },
      }),
    );
    expect(error).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS' });
  });

  it('a code is single use and bound to its client, redirect URI and resource', async () => {
    const person = await signedIn('basic');
    const registered = await client();
    const other = await client();
    const approve = async () =>
      (
        await oauthServerService.approve({
          ctx: { ...t.deps, actor: person.actor },
          request: {
            client_id: registered.client_id,
            redirect_uri: registered.redirect_uris[0]!,
            code_challenge: pkce().challenge,
            scopes: [],
            resource: RESOURCE,
          },
        })
      ).code;
    const exchange = (code: string, over: Record<string, string | undefined> = {}) =>
      oauthServerService.exchangeCode({
        ctx: t.deps,
        clientId: registered.client_id,
        code,
        redirectUri: registered.redirect_uris[0],
        resource: RESOURCE,
        ...over,
      });
    const code = await approve();
    expect(await oauthError(exchange(code, { clientId: other.client_id }))).toBe('invalid_grant');
    // A refused exchange (rolled back) leaves the code to its own client, once.
    await exchange(code);
    expect(await oauthError(exchange(code))).toBe('invalid_grant');
    expect(await oauthError(exchange(await approve(), { redirectUri: 'http://127.0.0.1:7778/cb' }))).toBe(
      'invalid_grant',
    );
    expect(await oauthError(exchange(await approve(), { resource: 'https://other.example/mcp' }))).toBe(
      'invalid_target',
    );
    const good = await approve();
    await exchange(good);
    expect(await oauthError(exchange(good))).toBe('invalid_grant');
  });

  it('access tokens authenticate only at their resource, as the person with the grant’s scopes', async () => {
    const { tokens, user } = await tokensFor('curator', ['search']);
    const authorization = `Bearer ${tokens.access_token}`;
    const actor = await authenticate({ ctx: t.deps, authorization, resource: RESOURCE });
    expect(actor).toMatchObject({ user_id: user.id, role: 'curator', credential: 'oauth' });
    expect(actor.oauth).toMatchObject({ scopes: ['search'], resource: RESOURCE });
    expect(toolsFor(actor)).toEqual(['search', 'fetch']);
    for (const resource of [undefined, 'https://other.example/mcp'])
      expect(await errorOf(authenticate({ ctx: t.deps, authorization, resource }))).toMatchObject({
        error_code: 'UNAUTHENTICATED',
      });
    // A refresh token is never a bearer credential.
    expect(
      await errorOf(
        authenticate({ ctx: t.deps, authorization: `Bearer ${tokens.refresh_token}`, resource: RESOURCE }),
      ),
    ).toMatchObject({ error_code: 'UNAUTHENTICATED' });
    const stored = await t.deps.db.selectFrom('oauth_tokens').select('token_hash').execute();
    expect(stored.map((r) => r.token_hash)).toContain(hashCredential(tokens.access_token));
    expect(stored.map((r) => r.token_hash)).not.toContain(tokens.access_token);
  });

  it('refresh rotates; a replayed refresh token revokes the grant', async () => {
    const { tokens, client: registered } = await tokensFor('basic');
    const refresh = (token: string) =>
      oauthServerService.exchangeRefreshToken({
        ctx: t.deps,
        clientId: registered.client_id,
        refreshToken: token,
        scopes: undefined,
        resource: RESOURCE,
      });
    const next = await refresh(tokens.refresh_token!);
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(
      await authenticate({ ctx: t.deps, authorization: `Bearer ${next.access_token}`, resource: RESOURCE }),
    ).toBeTruthy();
    expect(await oauthError(refresh(tokens.refresh_token!))).toBe('invalid_grant');
    expect(
      await errorOf(
        authenticate({ ctx: t.deps, authorization: `Bearer ${next.access_token}`, resource: RESOURCE }),
      ),
    ).toMatchObject({ error_code: 'UNAUTHENTICATED' });
    expect(await oauthError(refresh(next.refresh_token!))).toBe('invalid_grant');
  });

  it('revocation: a refresh token ends the grant, an access token alone; another client’s is ignored', async () => {
    const { tokens, client: registered, actor } = await tokensFor('basic');
    const other = await client();
    await oauthServerService.revokeToken({
      ctx: t.deps,
      clientId: other.client_id,
      token: tokens.access_token,
    });
    const bearer = { ctx: t.deps, authorization: `Bearer ${tokens.access_token}`, resource: RESOURCE };
    expect(await authenticate(bearer)).toBeTruthy();
    await oauthServerService.revokeToken({
      ctx: t.deps,
      clientId: registered.client_id,
      token: tokens.refresh_token!,
    });
    expect(await errorOf(authenticate(bearer))).toMatchObject({ error_code: 'UNAUTHENTICATED' });
    expect(await oauthServerService.listOwnGrants({ ctx: { ...t.deps, actor } })).toEqual([]);
  });

  it('lists grants per person and for admins; a person revokes only their own', async () => {
    const a = await tokensFor('basic');
    const b = await tokensFor('basic');
    const own = await oauthServerService.listOwnGrants({ ctx: { ...t.deps, actor: a.actor } });
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({
      client_name: 'Agent',
      redirect_hosts: ['127.0.0.1:7777'],
      scopes: ['search', 'ask'],
    });
    const theirs = (await oauthServerService.listOwnGrants({ ctx: { ...t.deps, actor: b.actor } }))[0]!;
    expect(
      await errorOf(oauthServerService.revokeOwnGrant({ ctx: { ...t.deps, actor: a.actor }, id: theirs.id })),
    ).toMatchObject({
      error_code: 'TOKEN_NOT_FOUND',
    });
    const all = await oauthServerService.listAllGrants({ ctx: t.deps });
    expect(all.map((g) => g.id)).toEqual(expect.arrayContaining([own[0]!.id, theirs.id]));
    await oauthServerService.revokeAnyGrant({ ctx: t.deps, id: theirs.id });
    expect(await oauthServerService.listOwnGrants({ ctx: { ...t.deps, actor: b.actor } })).toEqual([]);
  });
});
