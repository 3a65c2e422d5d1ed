import { randomBytes } from 'node:crypto';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import {
  hashCredential,
  isServiceAccountEmail,
  OAUTH_ACCESS_TOKEN_PREFIX,
  OAUTH_REFRESH_TOKEN_PREFIX,
} from '../auth/credential.ts';
import type { Actor } from '../auth/roles.ts';
import type { ActorContext, ServiceContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { scopesForRole } from '../mcp/mcp.service.ts';
import * as oauthRepository from './oauth-server.repository.ts';
import { type OAuthGrant, OAuthProtocolError } from './oauth-server.schemas.ts';

type Deps = ServiceContext<'db' | 'config' | 'secrets'>;

const CODE_TTL_MS = 5 * 60_000;
/** How long a registered client that no person approved is kept (registration is open to anyone). */
const UNUSED_CLIENT_MS = 24 * 3_600_000;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Codes and tokens: 256-bit random values, stored only as their SHA-256 hash (`hashCredential`). */
const secret = (prefix: string) => prefix + randomBytes(32).toString('base64url');

/**
 * Where a client may receive codes: https anywhere, http only on this machine (native apps, RFC 8252),
 * or an app's own scheme (`cursor://…`, `vscode://…`); never a fragment, never script or data URLs.
 */
function assertRedirectUri(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new OAuthProtocolError('invalid_redirect_uri', `redirect_uri ${JSON.stringify(uri)} is not a URL`);
  }
  const refuse = (why: string) =>
    new OAuthProtocolError('invalid_redirect_uri', `redirect_uri ${JSON.stringify(uri)}: ${why}`);
  if (url.hash) throw refuse('must not have a fragment');
  if (['javascript:', 'data:', 'file:', 'blob:', 'vbscript:'].includes(url.protocol))
    throw refuse('scheme not allowed');
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname))
    throw refuse('http is allowed only for localhost');
}

/** Dynamic client registration (RFC 7591): the client's metadata, its secret (if any) encrypted at rest. */
export async function registerClient({
  ctx,
  client,
}: {
  ctx: Deps;
  client: OAuthClientInformationFull;
}): Promise<OAuthClientInformationFull> {
  if (!client.redirect_uris.length)
    throw new OAuthProtocolError('invalid_redirect_uri', 'At least one redirect_uri is required');
  for (const uri of client.redirect_uris) assertRedirectUri(String(uri));
  const { client_id, client_secret, client_secret_expires_at, client_id_issued_at, ...metadata } = client;
  await oauthRepository.deleteUnusedClients(ctx.db, new Date(Date.now() - UNUSED_CLIENT_MS));
  await oauthRepository.insertClient(ctx.db, {
    client_id,
    client_secret_encrypted: client_secret ? ctx.secrets.encrypt(client_secret) : null,
    client_secret_expires_at: client_secret_expires_at ? new Date(client_secret_expires_at * 1000) : null,
    client_name: client.client_name?.slice(0, 200) ?? null,
    redirect_uris: client.redirect_uris.map(String),
    metadata: { ...metadata, client_id_issued_at },
  });
  return client;
}

/** A registered client as the OAuth handlers read it (its secret decrypted for their comparison). */
export async function getClient({
  ctx,
  clientId,
}: {
  ctx: Deps;
  clientId: string;
}): Promise<OAuthClientInformationFull | undefined> {
  const row = await oauthRepository.findClient(ctx.db, clientId);
  if (!row) return undefined;
  const { client_id_issued_at, ...metadata } = row.metadata as { client_id_issued_at?: number };
  return {
    ...(metadata as Omit<OAuthClientInformationFull, 'client_id' | 'redirect_uris'>),
    client_id: row.client_id,
    client_name: row.client_name ?? undefined,
    redirect_uris: row.redirect_uris,
    ...(client_id_issued_at ? { client_id_issued_at } : {}),
    ...(row.client_secret_encrypted
      ? {
          client_secret: ctx.secrets.decrypt(row.client_secret_encrypted),
          client_secret_expires_at: row.client_secret_expires_at
            ? Math.floor(new Date(row.client_secret_expires_at).getTime() / 1000)
            : 0,
        }
      : {}),
  };
}

/**
 * The scopes a person grants: those asked for that their role allows (all their role allows when none
 * is named), never above the role. Refused when nothing asked for is allowed.
 */
export function grantableScopes(actor: Actor, requested: readonly string[]): string[] {
  const allowed = scopesForRole(actor.role);
  if (!requested.length) return allowed;
  const granted = allowed.filter((scope) => requested.includes(scope));
  if (!granted.length)
    throw new OAuthProtocolError(
      'invalid_scope',
      `None of the scopes asked for (${requested.join(' ')}) is available to a ${actor.role} person; available: ${allowed.join(' ') || 'none'}`,
    );
  return granted;
}

/** Only a person approves a client for themself: never an API key's service account. */
export function assertPerson(actor: Actor): void {
  if (actor.credential === 'api_key' || actor.credential === 'oauth' || isServiceAccountEmail(actor.email))
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      'Sign in as a person (a personal access token or your sign-in provider), not with an API key',
    );
}

/**
 * The signed-in person approves the client: a single-use code, valid for minutes, bound to the PKCE
 * challenge, the exact redirect URI, the scopes and the resource.
 */
export async function approve({
  ctx,
  request,
}: {
  ctx: Deps & { actor: Actor };
  request: {
    client_id: string;
    redirect_uri: string;
    code_challenge: string;
    scopes: string[];
    resource: string;
  };
}): Promise<{ code: string; scopes: string[] }> {
  const { actor } = ctx;
  assertPerson(actor);
  const client = await oauthRepository.findClient(ctx.db, request.client_id);
  if (!client)
    throw new OAuthProtocolError('invalid_client', 'This client is no longer registered; add it again');
  if (!client.redirect_uris.includes(request.redirect_uri))
    throw new OAuthProtocolError('invalid_request', 'Unregistered redirect_uri');
  const scopes = grantableScopes(actor, request.scopes);
  const code = secret('kmac-');
  const now = new Date();
  await oauthRepository.deleteExpiredCodes(ctx.db, now);
  await oauthRepository.insertCode(ctx.db, {
    code_hash: hashCredential(code),
    client_id: client.client_id,
    user_id: actor.user_id,
    scopes,
    resource: request.resource,
    redirect_uri: request.redirect_uri,
    code_challenge: request.code_challenge,
    expires_at: new Date(now.getTime() + CODE_TTL_MS),
  });
  return { code, scopes };
}

function invalidCode(): OAuthProtocolError {
  return new OAuthProtocolError(
    'invalid_grant',
    'The authorization code is invalid, expired or already used',
  );
}

/** The PKCE challenge the code was issued for (the handler verifies the verifier against it). */
export async function challengeForCode({
  ctx,
  clientId,
  code,
}: {
  ctx: Deps;
  clientId: string;
  code: string;
}): Promise<string> {
  const row = await oauthRepository.findCode(ctx.db, hashCredential(code));
  if (!row || row.client_id !== clientId || new Date(row.expires_at).getTime() <= Date.now())
    throw invalidCode();
  return row.code_challenge;
}

async function issueTokens(
  ctx: Deps,
  grant: { id: number; scopes: readonly string[] },
  now: Date,
): Promise<OAuthTokens> {
  const access = secret(OAUTH_ACCESS_TOKEN_PREFIX);
  const refresh = secret(OAUTH_REFRESH_TOKEN_PREFIX);
  const accessSeconds = ctx.config.KAS_OAUTH_ACCESS_TOKEN_TTL_S;
  await oauthRepository.deleteExpiredTokens(ctx.db, now);
  await oauthRepository.insertToken(ctx.db, {
    token_hash: hashCredential(access),
    grant_id: grant.id,
    kind: 'access',
    expires_at: new Date(now.getTime() + accessSeconds * 1000),
  });
  await oauthRepository.insertToken(ctx.db, {
    token_hash: hashCredential(refresh),
    grant_id: grant.id,
    kind: 'refresh',
    expires_at: new Date(now.getTime() + ctx.config.KAS_OAUTH_REFRESH_TOKEN_TTL_DAYS * 86_400_000),
  });
  await oauthRepository.touchGrant(ctx.db, grant.id, now);
  return {
    access_token: access,
    token_type: 'Bearer',
    expires_in: accessSeconds,
    refresh_token: refresh,
    scope: grant.scopes.join(' '),
  };
}

/**
 * The code for tokens (once): the client, the redirect URI and the resource must be those the code
 * was issued for. The approval becomes a grant the person can list and revoke.
 */
export async function exchangeCode({
  ctx,
  clientId,
  code,
  redirectUri,
  resource,
}: {
  ctx: Deps;
  clientId: string;
  code: string;
  redirectUri: string | undefined;
  resource: string | undefined;
}): Promise<OAuthTokens> {
  const now = new Date();
  return ctx.db.transaction().execute(async (tx) => {
    const row = await oauthRepository.takeCode(tx, hashCredential(code));
    if (!row || row.client_id !== clientId || new Date(row.expires_at).getTime() <= now.getTime())
      throw invalidCode();
    if (redirectUri !== undefined && redirectUri !== row.redirect_uri)
      throw new OAuthProtocolError('invalid_grant', 'redirect_uri differs from the authorization request');
    if (resource !== undefined && resource !== row.resource)
      throw new OAuthProtocolError('invalid_target', 'resource differs from the authorization request');
    const grant = await oauthRepository.insertGrant(tx, {
      client_id: row.client_id,
      user_id: row.user_id,
      scopes: row.scopes,
      resource: row.resource,
    });
    return issueTokens({ ...ctx, db: tx }, { id: grant.id, scopes: row.scopes }, now);
  });
}

/**
 * A refresh token for new tokens, rotated: the one presented is spent. Presenting a spent one again
 * means it was copied, so the whole grant is revoked (OAuth 2.1 §4.3.1).
 */
export async function exchangeRefreshToken({
  ctx,
  clientId,
  refreshToken,
  scopes,
  resource,
}: {
  ctx: Deps;
  clientId: string;
  refreshToken: string;
  scopes: string[] | undefined;
  resource: string | undefined;
}): Promise<OAuthTokens> {
  const now = new Date();
  const hash = hashCredential(refreshToken);
  const row = await oauthRepository.findToken(ctx.db, hash);
  const invalid = new OAuthProtocolError('invalid_grant', 'The refresh token is invalid, expired or revoked');
  if (row?.kind !== 'refresh' || row.client_id !== clientId) throw invalid;
  if (row.used_at !== null || !(await oauthRepository.useRefreshToken(ctx.db, hash, now))) {
    await oauthRepository.deleteGrant(ctx.db, row.grant_id);
    throw new OAuthProtocolError(
      'invalid_grant',
      'This refresh token was already used; the grant is revoked and the person must approve the client again',
    );
  }
  if (new Date(row.expires_at).getTime() <= now.getTime()) throw invalid;
  if (resource !== undefined && resource !== row.resource)
    throw new OAuthProtocolError('invalid_target', 'resource differs from the grant');
  if (scopes?.some((scope) => !row.scopes.includes(scope)))
    throw new OAuthProtocolError('invalid_scope', `The grant covers only: ${row.scopes.join(' ')}`);
  return issueTokens(ctx, { id: row.grant_id, scopes: row.scopes }, now);
}

/**
 * RFC 7009: revoking a refresh token ends the grant (every token of it); an access token ends alone.
 * An unknown token, or another client's, is ignored.
 */
export async function revokeToken({
  ctx,
  clientId,
  token,
}: {
  ctx: Deps;
  clientId: string;
  token: string;
}): Promise<void> {
  const row = await oauthRepository.findToken(ctx.db, hashCredential(token));
  if (!row || row.client_id !== clientId) return;
  if (row.kind === 'refresh') await oauthRepository.deleteGrant(ctx.db, row.grant_id);
  else await oauthRepository.deleteToken(ctx.db, row.token_hash);
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

function hostOf(uri: string): string {
  try {
    const url = new URL(uri);
    return url.host || `${url.protocol}//`;
  } catch {
    return uri;
  }
}

function toGrant(row: Awaited<ReturnType<typeof oauthRepository.listGrants>>[number]): OAuthGrant {
  return {
    id: row.id,
    client_id: row.client_id,
    client_name: row.client_name,
    redirect_hosts: [...new Set(row.redirect_uris.map(hostOf))],
    user_id: row.user_id,
    email: row.email,
    scopes: row.scopes,
    resource: row.resource,
    created_at: new Date(row.created_at).toISOString(),
    last_used_at: iso(row.last_used_at),
  };
}

/** The clients the caller approved (their grants), newest first. */
export async function listOwnGrants({ ctx }: { ctx: ActorContext<'db'> }): Promise<OAuthGrant[]> {
  return (await oauthRepository.listGrants(ctx.db, ctx.actor.user_id)).map(toGrant);
}

/** Every person's grants (admins). */
export async function listAllGrants({ ctx }: { ctx: ServiceContext<'db'> }): Promise<OAuthGrant[]> {
  return (await oauthRepository.listGrants(ctx.db)).map(toGrant);
}

/** Revokes one of the caller's grants: its tokens stop working on the next request. */
export async function revokeOwnGrant({ ctx, id }: { ctx: ActorContext<'db'>; id: number }): Promise<void> {
  if (!(await oauthRepository.deleteGrant(ctx.db, id, ctx.actor.user_id)))
    throw new AppError('TOKEN_NOT_FOUND', `OAuth grant ${id} not found`);
}

/** Revokes anyone's grant (admins). */
export async function revokeAnyGrant({ ctx, id }: { ctx: ServiceContext<'db'>; id: number }): Promise<void> {
  if (!(await oauthRepository.deleteGrant(ctx.db, id)))
    throw new AppError('TOKEN_NOT_FOUND', `OAuth grant ${id} not found`);
}
