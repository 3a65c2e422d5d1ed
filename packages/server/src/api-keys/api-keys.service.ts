import { randomUUID } from 'node:crypto';
import type { CachedActor } from '../auth/auth-cache.ts';
import { type Actor, apiKeyActor, type Role } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../errors.ts';
import * as identityRepository from '../identity/identity.repository.ts';
import { PERSONAL_TOKEN_PREFIX } from '../identity/identity.secret.ts';
import * as oidcService from '../identity/oidc.service.ts';
import { looksLikeJwt } from '../identity/oidc.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as apiKeysRepository from './api-keys.repository.ts';
import type { ApiKeyDescriptor, CreateApiKeyInput, Me, UpdateApiKeyInput } from './api-keys.schemas.ts';
import { displayApiKey, generateApiKey, hashApiKey, parseAuthorizationHeader } from './api-keys.secret.ts';

type Deps = ServiceContext<'db'> & Partial<ServiceContext<'authCache' | 'oidc'>>;

function serviceAccountEmail(): string {
  return `api-key-${randomUUID()}@service-account.kas`;
}

function notFound(id: number): AppError {
  return new AppError('API_KEY_NOT_FOUND', `API key ${id} not found`);
}

/** The caller as the API sees it; no database work beyond authentication. */
export function describeCaller({ actor }: { actor: Actor }): Me {
  return {
    user_id: actor.user_id,
    role: actor.role,
    api_key_id: actor.api_key_id,
    email: actor.email,
    credential: actor.credential,
  };
}

/** `expires_in_days` → the instant; null: never. */
export function expiryFrom(days: number | null | undefined, now = Date.now()): Date | null {
  return days ? new Date(now + days * 86_400_000) : null;
}

function toDescriptor(row: Awaited<ReturnType<typeof apiKeysRepository.findKey>> & object): ApiKeyDescriptor {
  return { ...row, expires_at: row.expires_at ? new Date(row.expires_at).toISOString() : null };
}

export async function listApiKeys({ ctx }: { ctx: Deps }): Promise<ApiKeyDescriptor[]> {
  const cache = ctx.authCache;
  if (cache?.keyList) return [...cache.keyList];
  const generation = cache?.generation ?? 0;
  const keys = (await apiKeysRepository.listKeys(ctx.db)).map(toDescriptor);
  cache?.setKeyList(keys, generation);
  return [...keys];
}

export async function getApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<ApiKeyDescriptor> {
  const key = await apiKeysRepository.findKey(ctx.db, id);
  if (!key) throw notFound(id);
  return toDescriptor(key);
}

/** Creates a key and its own service-account user; the only response that carries the full key. */
export async function createApiKey({
  ctx,
  input,
  value,
}: {
  ctx: Deps;
  input: CreateApiKeyInput;
  /** A fixed key value (bootstrap); generated when omitted. */
  value?: string;
}): Promise<ApiKeyDescriptor> {
  const key = value ?? generateApiKey();
  const id = await ctx.db.transaction().execute(async (trx) => {
    const user = await usersRepository.insertUser(trx, { email: serviceAccountEmail(), role: input.role });
    const row = await apiKeysRepository.insertKey(trx, {
      name: input.name ?? null,
      hashed_key: hashApiKey(key),
      display: displayApiKey(key),
      user_id: user.id,
      expires_at: expiryFrom(input.expires_in_days),
    });
    return row.id;
  });
  await ctx.authCache?.invalidate();
  return { ...(await getApiKey({ ctx, id })), api_key: key };
}

export async function regenerateApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<ApiKeyDescriptor> {
  const key = generateApiKey();
  const updated = await apiKeysRepository.updateKeySecret(ctx.db, id, {
    hashed_key: hashApiKey(key),
    display: displayApiKey(key),
  });
  await ctx.authCache?.invalidate();
  if (!updated) throw notFound(id);
  return { ...(await getApiKey({ ctx, id })), api_key: key };
}

export async function updateApiKey({
  ctx,
  input,
}: {
  ctx: Deps;
  input: UpdateApiKeyInput;
}): Promise<ApiKeyDescriptor> {
  const { api_key_id: id, name, role, expires_in_days } = input;
  await ctx.db.transaction().execute(async (trx) => {
    const owner = await apiKeysRepository.findUserIdOfKey(trx, id);
    if (!owner) throw notFound(id);
    if (name !== undefined || expires_in_days !== undefined) {
      await apiKeysRepository.updateKey(trx, id, {
        ...(name !== undefined && { name }),
        ...(expires_in_days !== undefined && { expires_at: expiryFrom(expires_in_days) }),
      });
    }
    if (role !== undefined) await usersRepository.updateUser(trx, owner.user_id, { role });
  });
  await ctx.authCache?.invalidate();
  return getApiKey({ ctx, id });
}

/** Deleting a key deletes its service-account user; the key stops working on the next request. */
export async function deleteApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  const owner = await apiKeysRepository.findUserIdOfKey(ctx.db, id);
  if (!owner) throw notFound(id);
  await usersRepository.deleteUser(ctx.db, owner.user_id);
  await ctx.authCache?.invalidate();
}

function checkUsable(entry: CachedActor, what: string, now: number): Actor {
  if (entry.expires_at && entry.expires_at.getTime() <= now) {
    throw new AppError(
      'UNAUTHENTICATED',
      `The ${what} expired at ${entry.expires_at.toISOString()}; create a new one`,
    );
  }
  return entry.actor;
}

async function loadByHash(ctx: Deps, credential: string, hash: string): Promise<CachedActor | undefined> {
  if (credential.startsWith(PERSONAL_TOKEN_PREFIX)) {
    const row = await identityRepository.findActorByTokenHash(ctx.db, hash);
    if (!row) return undefined;
    if (!row.is_active) throw deactivated();
    return {
      actor: {
        user_id: row.user_id,
        role: row.role,
        api_key_id: null,
        email: row.email,
        credential: 'personal_token',
        rate_limit_key: `pat:${row.token_id}`,
        oidc_token: null,
      },
      expires_at: row.expires_at ? new Date(row.expires_at) : null,
    };
  }
  const row = await apiKeysRepository.findActorByHash(ctx.db, hash);
  if (!row) return undefined;
  if (!row.is_active) throw deactivated();
  return {
    actor: apiKeyActor(row),
    expires_at: row.expires_at ? new Date(row.expires_at) : null,
  };
}

function deactivated(): AppError {
  return new AppError('UNAUTHENTICATED', 'This user is deactivated; ask an admin to reactivate them');
}

/**
 * Resolves the caller from the Authorization header: an API key (`svck-…`), a personal access token
 * (`kpat-…`) or an OIDC bearer JWT (`identity/oidc.service.ts`). Read from the database on every request (or from the embedded mode's cache, which every
 * write to keys, tokens, users, roles and the active flag clears), so deletion, regeneration, expiry,
 * deactivation and role changes take effect at once in every process.
 */
export async function authenticate({
  ctx,
  authorization,
  admit,
}: {
  ctx: Deps;
  authorization: string | undefined;
  /**
   * Called before the credential is checked: `cached` says whether it is answered from the cache (the
   * failed-authentication limiter then needs no database statement).
   */
  admit?: (cached: boolean) => Promise<void> | void;
}): Promise<Actor> {
  const credential = parseAuthorizationHeader(authorization);
  const isJwt = credential !== undefined && looksLikeJwt(credential);
  if (admit && (!credential || isJwt)) await admit(false);
  if (!credential)
    throw new AppError('UNAUTHENTICATED', 'Missing API key: send Authorization: Bearer <API_KEY>');
  if (isJwt) return oidcService.authenticateOidc({ ctx, token: credential });
  const isToken = credential.startsWith(PERSONAL_TOKEN_PREFIX);
  const what = isToken ? 'personal access token' : 'API key';
  const hash = hashApiKey(credential);
  const now = Date.now();
  const cached = ctx.authCache?.get(hash);
  if (admit) await admit(cached !== undefined);
  if (cached) return checkUsable(cached, what, now);
  const generation = ctx.authCache?.generation ?? 0;
  const entry = await loadByHash(ctx, credential, hash);
  if (!entry)
    throw new AppError('UNAUTHENTICATED', isToken ? 'Invalid personal access token' : 'Invalid API key');
  ctx.authCache?.set(hash, entry, generation);
  return checkUsable(entry, what, now);
}

export type BootstrapResult = { created: false } | { created: true; key: string; generated: boolean };

/**
 * Start-up: with KAS_BOOTSTRAP_ADMIN_KEY, make sure an admin key with exactly that value exists; with
 * none and no admin key at all, create one so that a fresh install can be used.
 */
export async function ensureBootstrapAdminKey({
  ctx,
  value,
}: {
  ctx: Deps;
  value: string | undefined;
}): Promise<BootstrapResult> {
  if (value) {
    const existing = await apiKeysRepository.findActorByHash(ctx.db, hashApiKey(value));
    if (existing) {
      if (existing.role !== ('admin' satisfies Role)) {
        await usersRepository.updateUser(ctx.db, existing.user_id, { role: 'admin' });
        await ctx.authCache?.invalidate();
      }
      return { created: false };
    }
    await createApiKey({ ctx, input: { name: 'bootstrap admin', role: 'admin' }, value });
    return { created: true, key: value, generated: false };
  }
  if ((await apiKeysRepository.countAdminKeys(ctx.db)) > 0) return { created: false };
  const created = await createApiKey({ ctx, input: { name: 'initial admin', role: 'admin' } });
  return { created: true, key: created.api_key!, generated: true };
}
