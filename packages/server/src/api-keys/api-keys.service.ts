import { randomUUID } from 'node:crypto';
import type { AuthCache } from '../auth/auth-cache.ts';
import type { Actor, Role } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import type { Db } from '../db/database.ts';
import { AppError } from '../errors.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as apiKeysRepository from './api-keys.repository.ts';
import type { ApiKeyDescriptor, CreateApiKeyInput, Me, UpdateApiKeyInput } from './api-keys.schemas.ts';
import { displayApiKey, generateApiKey, hashApiKey, parseAuthorizationHeader } from './api-keys.secret.ts';

type Deps = ServiceContext<'db'> & Partial<ServiceContext<'authCache'>>;

function serviceAccountEmail(): string {
  return `api-key-${randomUUID()}@service-account.kas`;
}

function notFound(id: number): AppError {
  return new AppError('API_KEY_NOT_FOUND', `API key ${id} not found`);
}

/** The caller as the API sees it; no database work beyond authentication. */
export function describeCaller({ actor }: { actor: Actor }): Me {
  return { user_id: actor.user_id, role: actor.role, api_key_id: actor.api_key_id };
}

export async function listApiKeys({ ctx }: { ctx: Deps }): Promise<ApiKeyDescriptor[]> {
  if (ctx.authCache?.keyList) return [...ctx.authCache.keyList];
  const keys = await apiKeysRepository.listKeys(ctx.db);
  if (ctx.authCache) ctx.authCache.keyList = keys;
  return [...keys];
}

export async function getApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<ApiKeyDescriptor> {
  const key = await apiKeysRepository.findKey(ctx.db, id);
  if (!key) throw notFound(id);
  return key;
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
    });
    return row.id;
  });
  ctx.authCache?.clear();
  return { ...(await getApiKey({ ctx, id })), api_key: key };
}

export async function regenerateApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<ApiKeyDescriptor> {
  const key = generateApiKey();
  const updated = await apiKeysRepository.updateKeySecret(ctx.db, id, {
    hashed_key: hashApiKey(key),
    display: displayApiKey(key),
  });
  ctx.authCache?.clear();
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
  const { api_key_id: id, name, role } = input;
  await ctx.db.transaction().execute(async (trx) => {
    const owner = await apiKeysRepository.findUserIdOfKey(trx, id);
    if (!owner) throw notFound(id);
    if (name !== undefined) await apiKeysRepository.updateKeyName(trx, id, name);
    if (role !== undefined) await usersRepository.updateUser(trx, owner.user_id, { role });
  });
  ctx.authCache?.clear();
  return getApiKey({ ctx, id });
}

/** Deleting a key deletes its service-account user; the key stops working on the next request. */
export async function deleteApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  const owner = await apiKeysRepository.findUserIdOfKey(ctx.db, id);
  if (!owner) throw notFound(id);
  await usersRepository.deleteUser(ctx.db, owner.user_id);
  ctx.authCache?.clear();
}

/**
 * Resolves the caller from the Authorization header. Read from the database on every request so that
 * deletion, regeneration and role changes take effect at once in every process.
 */
export async function authenticate({
  ctx,
  authorization,
}: {
  ctx: Deps;
  authorization: string | undefined;
}): Promise<Actor> {
  const key = parseAuthorizationHeader(authorization);
  if (!key) throw new AppError('UNAUTHENTICATED', 'Missing API key: send Authorization: Bearer <API_KEY>');
  const hash = hashApiKey(key);
  const cached = ctx.authCache?.get(hash);
  if (cached) return cached;
  const actor = await apiKeysRepository.findActorByHash(ctx.db, hash);
  if (!actor) throw new AppError('UNAUTHENTICATED', 'Invalid API key');
  ctx.authCache?.set(hash, actor);
  return actor;
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
        ctx.authCache?.clear();
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
