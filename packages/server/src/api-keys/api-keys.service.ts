import {
  displayCredential,
  expiryFrom,
  generateApiKey,
  hashCredential,
  serviceAccountEmail,
} from '../auth/credential.ts';
import type { Actor, Role } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../errors.ts';
import * as identityRepository from '../identity/identity.repository.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as apiKeysRepository from './api-keys.repository.ts';
import type { ApiKeyDescriptor, CreateApiKeyInput, Me, UpdateApiKeyInput } from './api-keys.schemas.ts';

type Deps = ServiceContext<'db'> & Partial<ServiceContext<'authCache'>>;

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

function toDescriptor(row: Awaited<ReturnType<typeof apiKeysRepository.findKey>> & object): ApiKeyDescriptor {
  return { ...row, expires_at: row.expires_at ? new Date(row.expires_at).toISOString() : null };
}

export async function listApiKeys({ ctx }: { ctx: Deps }): Promise<ApiKeyDescriptor[]> {
  const cache = ctx.authCache;
  // Only this function fills the cached list.
  if (cache?.keyList) return [...(cache.keyList as readonly ApiKeyDescriptor[])];
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
  input: Omit<CreateApiKeyInput, 'allow_personal_tokens'> & { allow_personal_tokens?: boolean };
  /** A fixed key value (bootstrap); generated when omitted. */
  value?: string;
}): Promise<ApiKeyDescriptor> {
  const key = value ?? generateApiKey();
  const id = await ctx.db.transaction().execute(async (trx) => {
    const user = await usersRepository.insertUser(trx, { email: serviceAccountEmail(), role: input.role });
    const row = await apiKeysRepository.insertKey(trx, {
      name: input.name ?? null,
      hashed_key: hashCredential(key),
      display: displayCredential(key),
      user_id: user.id,
      expires_at: expiryFrom(input.expires_in_days),
      allow_personal_tokens: input.allow_personal_tokens ?? false,
    });
    return row.id;
  });
  await ctx.authCache?.invalidate();
  return { ...(await getApiKey({ ctx, id })), api_key: key };
}

/** A new value; the old one, and every personal token it minted, stop working at once. */
export async function regenerateApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<ApiKeyDescriptor> {
  const key = generateApiKey();
  const updated = await ctx.db.transaction().execute(async (trx) => {
    const row = await apiKeysRepository.updateKeySecret(trx, id, {
      hashed_key: hashCredential(key),
      display: displayCredential(key),
    });
    if (row) await identityRepository.deleteTokensMintedByKey(trx, id);
    return row;
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
  const { api_key_id: id, name, role, expires_in_days, allow_personal_tokens } = input;
  await ctx.db.transaction().execute(async (trx) => {
    const owner = await apiKeysRepository.findUserIdOfKey(trx, id);
    if (!owner) throw notFound(id);
    if (name !== undefined || expires_in_days !== undefined || allow_personal_tokens !== undefined) {
      await apiKeysRepository.updateKey(trx, id, {
        ...(name !== undefined && { name }),
        ...(expires_in_days !== undefined && { expires_at: expiryFrom(expires_in_days) }),
        ...(allow_personal_tokens !== undefined && { allow_personal_tokens }),
      });
    }
    if (role !== undefined) await usersRepository.updateUser(trx, owner.user_id, { role });
  });
  await ctx.authCache?.invalidate();
  return getApiKey({ ctx, id });
}

/**
 * Deleting a key deletes its service-account user and the personal tokens it minted; the key stops
 * working on the next request.
 */
export async function deleteApiKey({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  const owner = await apiKeysRepository.findUserIdOfKey(ctx.db, id);
  if (!owner) throw notFound(id);
  await usersRepository.deleteUser(ctx.db, owner.user_id);
  await ctx.authCache?.invalidate();
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
    const existing = await apiKeysRepository.findActorByHash(ctx.db, hashCredential(value));
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
