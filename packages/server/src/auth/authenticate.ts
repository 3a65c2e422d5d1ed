import * as apiKeysRepository from '../api-keys/api-keys.repository.ts';
import type { Db } from '../db/database.ts';
import { isUniqueViolation } from '../db/database.ts';
import { AppError } from '../errors.ts';
import * as identityRepository from '../identity/identity.repository.ts';
import * as oauthServerRepository from '../oauth-server/oauth-server.repository.ts';
import * as usersRepository from '../users/users.repository.ts';
import type { AuthCache, CachedActor } from './auth-cache.ts';
import {
  credentialKind,
  earliestExpiry,
  hashCredential,
  isExpired,
  isServiceAccountEmail,
  parseAuthorizationHeader,
} from './credential.ts';
import type { OidcIdentity, OidcVerifier } from './oidc.ts';
import { type Actor, apiKeyActor, roleAtLeast } from './roles.ts';

/** What resolving a credential needs: the database, and the cache and OIDC verifier when there are any. */
export interface AuthenticateDeps {
  db: Db;
  authCache?: AuthCache | null;
  oidc?: OidcVerifier | null;
}

const toDate = (value: Date | string | null) => (value === null ? null : new Date(value));

function unauthenticated(detail: string): AppError {
  return new AppError('UNAUTHENTICATED', detail);
}

function deactivated(): AppError {
  return unauthenticated('This user is deactivated; ask an admin to reactivate them');
}

function checkUsable(entry: CachedActor, what: string, now: number): Actor {
  if (isExpired(entry.expires_at, now)) {
    throw unauthenticated(`The ${what} expired at ${entry.expires_at!.toISOString()}; create a new one`);
  }
  return entry.actor;
}

async function loadApiKey(db: Db, hash: string): Promise<CachedActor | undefined> {
  const row = await apiKeysRepository.findActorByHash(db, hash);
  if (!row) return undefined;
  if (!row.is_active) throw deactivated();
  const actor = apiKeyActor({ ...row, expires_at: toDate(row.expires_at) });
  return { actor, expires_at: actor.expires_at };
}

/**
 * A personal token, and for one minted by an API key that key too: the token stops with the key (its
 * deletion cascades, its regeneration deletes the tokens it minted, its expiry is the token's latest)
 * and whenever an admin turns the key's `allow_personal_tokens` off.
 */
async function loadPersonalToken(db: Db, hash: string): Promise<CachedActor | undefined> {
  const row = await identityRepository.findActorByTokenHash(db, hash);
  if (!row) return undefined;
  if (!row.is_active) throw deactivated();
  let expiresAt = toDate(row.expires_at);
  if (row.created_by_api_key_id !== null) {
    const key = await apiKeysRepository.findKey(db, row.created_by_api_key_id);
    if (!key?.allow_personal_tokens) return undefined;
    expiresAt = earliestExpiry(expiresAt, toDate(key.expires_at));
  }
  const actor: Actor = {
    user_id: row.user_id,
    role: row.role,
    api_key_id: null,
    email: row.email,
    credential: 'personal_token',
    rate_limit_key: `pat:${row.token_id}`,
    oidc_token: null,
    expires_at: expiresAt,
    bound_api_key_id: row.created_by_api_key_id,
  };
  return { actor, expires_at: expiresAt };
}

/**
 * An OAuth access token kas issued to an MCP client: the person of its grant with their current role
 * (narrowed to the grant's scopes by the tools), accepted only at the resource it was issued for. Read
 * from the database on every request, so a revoked grant, an expired token and a deactivated person
 * are refused on the next one.
 */
async function authenticateOauth(db: Db, token: string, resource: string | undefined): Promise<Actor> {
  const row = await oauthServerRepository.findAccessTokenActor(db, hashCredential(token));
  if (!row) throw unauthenticated('Invalid or revoked access token; sign in again');
  const expiresAt = new Date(row.expires_at);
  if (isExpired(expiresAt)) throw unauthenticated('The access token expired; refresh it or sign in again');
  if (resource === undefined || row.resource !== resource)
    throw unauthenticated(`This access token was issued for ${row.resource} and is accepted only there`);
  if (!row.is_active) throw deactivated();
  return {
    user_id: row.user_id,
    role: row.role,
    api_key_id: null,
    email: row.email,
    credential: 'oauth',
    rate_limit_key: `oauth:${row.grant_id}`,
    oidc_token: null,
    expires_at: expiresAt,
    bound_api_key_id: null,
    oauth: { grant_id: row.grant_id, client_id: row.client_id, scopes: row.scopes, resource: row.resource },
  };
}

/**
 * The caller behind an API key or personal access token the auth cache holds and that has not expired,
 * found without waiting; undefined when `authenticate` must decide (any other credential, a cache miss,
 * an expired entry). The same cache and the same checks as `authenticate`, which it never contradicts.
 */
export function cachedCaller(ctx: AuthenticateDeps, authorization: string | undefined): Actor | undefined {
  if (!ctx.authCache) return undefined;
  const credential = parseAuthorizationHeader(authorization);
  if (!credential) return undefined;
  const kind = credentialKind(credential);
  if (kind === 'oidc' || kind === 'oauth') return undefined;
  const cached = ctx.authCache.get(hashCredential(credential));
  return cached && !isExpired(cached.expires_at, Date.now()) ? cached.actor : undefined;
}

/**
 * Resolves the caller from the Authorization header: an API key (`svck-…`), a personal access token
 * (`kpat-…`), an OAuth access token kas issued (`kmat-…`, only at the resource `resource` it is for) or
 * an OIDC bearer JWT. Keys and tokens are read from the database on every request, or
 * from the auth cache, which every write to keys, tokens, users, roles and the active flag clears, so
 * deletion, regeneration, expiry, deactivation and role changes take effect at once in every process.
 */
export async function authenticate({
  ctx,
  authorization,
  resource,
}: {
  ctx: AuthenticateDeps;
  authorization: string | undefined;
  /** The OAuth resource (audience) this surface is, when it accepts OAuth access tokens (the MCP endpoint). */
  resource?: string | undefined;
}): Promise<Actor> {
  const credential = parseAuthorizationHeader(authorization);
  const kind = credential === undefined ? undefined : credentialKind(credential);
  if (!credential) throw unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>');
  if (kind === 'oidc') return authenticateOidc({ ctx, token: credential });
  if (kind === 'oauth') return authenticateOauth(ctx.db, credential, resource);
  const isToken = kind === 'personal_token';
  const hash = hashCredential(credential);
  const now = Date.now();
  const cached = ctx.authCache?.get(hash);
  const what = isToken ? 'personal access token' : 'API key';
  if (cached) return checkUsable(cached, what, now);
  const generation = ctx.authCache?.generation ?? 0;
  const entry = isToken ? await loadPersonalToken(ctx.db, hash) : await loadApiKey(ctx.db, hash);
  if (!entry) throw unauthenticated(isToken ? 'Invalid personal access token' : 'Invalid API key');
  ctx.authCache?.set(hash, entry, generation);
  return checkUsable(entry, what, now);
}

type Person = NonNullable<Awaited<ReturnType<typeof usersRepository.findUserByEmail>>>;

/**
 * The person a verified identity signs in as. Once linked, the provider's stable `(iss, sub)` decides,
 * whatever the email says now; an unlinked identity is matched by email to a person (never to an API
 * key's service account) not linked to another subject of the provider, or provisioned, and linked.
 */
async function resolvePerson(ctx: AuthenticateDeps & { oidc: OidcVerifier }, identity: OidcIdentity) {
  const { issuer, subject, email } = identity;
  const linked = await identityRepository.findUserByOidcSubject(ctx.db, issuer, subject);
  if (linked) return linked;
  const noPerson = unauthenticated(`No person has the email ${email}; ask an admin to invite you`);
  if (isServiceAccountEmail(email)) throw noPerson;
  let user: Person | undefined = await usersRepository.findUserByEmail(ctx.db, email);
  if (user) {
    if (user.account_type !== 'person') throw noPerson;
    const other = await identityRepository.findOidcSubjectOfUser(ctx.db, user.id, issuer);
    if (other !== undefined && other !== subject) {
      throw unauthenticated(
        `The account with the email ${email} belongs to another sign-in at this provider; ask an admin`,
      );
    }
  } else {
    if (!ctx.oidc.autoProvision) throw noPerson;
    try {
      await usersRepository.insertUser(ctx.db, { email, role: identity.role, account_type: 'person' });
    } catch (error) {
      // Two first requests at once: the other one created the user.
      if (!isUniqueViolation(error)) throw error;
    }
    user = await usersRepository.findUserByEmail(ctx.db, email);
    if (user?.account_type !== 'person') throw noPerson;
  }
  await identityRepository.linkOidcSubject(ctx.db, { issuer, subject, user_id: user.id });
  // The first link wins: a concurrent sign-in may have linked this pair or this user otherwise.
  const confirmed = await identityRepository.findUserByOidcSubject(ctx.db, issuer, subject);
  if (confirmed?.id !== user.id)
    throw unauthenticated('This sign-in could not be linked to a person; try again');
  return confirmed;
}

/**
 * A person signed in with a bearer JWT from `KAS_OIDC_ISSUER`: verified on every request (keys are
 * cached by the verifier), resolved to a person (`resolvePerson`), raised to the role the configuration
 * grants, and refused when deactivated. The verified token stays on the actor for OAuth pass-through.
 */
export async function authenticateOidc({
  ctx,
  token,
}: {
  ctx: AuthenticateDeps;
  token: string;
}): Promise<Actor> {
  const oidc = ctx.oidc;
  if (!oidc) {
    throw unauthenticated(
      'This service does not accept OIDC tokens (KAS_OIDC_ISSUER is not set); use an API key or personal token',
    );
  }
  const identity = await oidc.verify(token);
  const user = await resolvePerson({ ...ctx, oidc }, identity);
  if (user.account_type !== 'person') throw unauthenticated('Only people sign in with OIDC');
  if (!user.is_active) throw deactivated();
  let role = user.role;
  if (!roleAtLeast(role, identity.role)) {
    await usersRepository.updateUser(ctx.db, user.id, { role: identity.role });
    await ctx.authCache?.invalidate();
    role = identity.role;
  }
  return {
    user_id: user.id,
    role,
    api_key_id: null,
    email: user.email,
    credential: 'oidc',
    rate_limit_key: `user:${user.id}`,
    oidc_token: token,
    expires_at: identity.expires_at,
    bound_api_key_id: null,
  };
}
