import type { Actor } from '../../auth/roles.ts';
import { loadScope, policy } from '../../auth/scope.ts';
import { AppError } from '../../errors.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import type {
  CredentialCreateInput,
  CredentialSnapshot,
  CredentialUpdateInput,
} from '../connectors.schemas.ts';
import {
  applyBinding,
  checkSecretOrigins,
  linksOf,
  reentersSecrets,
  secretsEntered,
} from './secret-origins.ts';
import {
  checkGroups,
  credentialNotFound,
  credentialSnapshot,
  type Deps,
  invalidConfig,
  MASK,
  openCredential,
  sourceOf,
} from './shared.ts';

function checkCredential(ctx: Deps, sourceName: string, json: Record<string, unknown>) {
  const source = sourceOf(ctx, sourceName);
  const checked = source.validateCredential(json);
  if (!checked.ok) {
    throw invalidConfig(
      'Invalid credential',
      checked.problems.map((p) => ({ ...p, key: `credential_json.${p.key}` })),
    );
  }
}

/** The credential, when the actor manages it; otherwise the same 404 as for an absent id. */
async function loadManageable(ctx: Deps, actor: Actor, id: number) {
  const row = await connectorsRepository.findCredential(ctx.db, id);
  const scope = await loadScope(ctx.db, actor);
  if (!row || !policy.manageCredential(scope, row)) throw credentialNotFound(id);
  return { row, scope };
}

export async function createCredential({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CredentialCreateInput;
}): Promise<CredentialSnapshot> {
  const { actor } = ctx;
  checkCredential(ctx, input.source, input.credential_json);
  await checkGroups(ctx.db, input.groups, await loadScope(ctx.db, actor), 'credentials', { optional: true });
  const id = await ctx.db.transaction().execute(async (trx) => {
    const id = await connectorsRepository.insertCredential(trx, {
      name: input.name ?? null,
      source: input.source,
      credential_json: ctx.secrets.encrypt(JSON.stringify(input.credential_json)),
      admin_public: input.admin_public,
      curator_public: input.curator_public,
      user_id: actor.user_id,
    });
    await connectorsRepository.replaceCredentialGroups(trx, id, [...new Set(input.groups)]);
    await secretsEntered({ ...ctx, db: trx }, id, actor);
    return id;
  });
  const row = await connectorsRepository.findCredential(ctx.db, id);
  if (!row) throw credentialNotFound(id);
  return credentialSnapshot(ctx, row);
}

export async function listCredentials({
  ctx,
  source,
}: {
  ctx: Deps & { actor: Actor };
  source?: string | undefined;
}): Promise<CredentialSnapshot[]> {
  const { actor } = ctx;
  const scope = await loadScope(ctx.db, actor);
  const rows = await connectorsRepository.listCredentials(ctx.db, { source });
  return rows.filter((row) => policy.manageCredential(scope, row)).map((row) => credentialSnapshot(ctx, row));
}

export async function getCredential({ ctx, id }: { ctx: Deps & { actor: Actor }; id: number }) {
  const { actor } = ctx;
  const { row } = await loadManageable(ctx, actor, id);
  return credentialSnapshot(ctx, row);
}

/**
 * Values sent back masked (`********`) keep their stored value, so a read-modify-write keeps secrets;
 * a change that would send kept secrets to another origin (a token endpoint) needs them given again.
 */
export async function updateCredential({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CredentialUpdateInput;
}): Promise<CredentialSnapshot> {
  const { actor } = ctx;
  const { row, scope } = await loadManageable(ctx, actor, input.credential_id);
  const current = openCredential(ctx, row);
  let json = current;
  if (input.credential_json) {
    json = Object.fromEntries(
      Object.entries(input.credential_json).map(([k, v]) => [k, v === MASK && k in current ? current[k] : v]),
    );
    checkCredential(ctx, row.source, json);
  }
  const reentered = reentersSecrets(input.credential_json, current);
  const binding =
    input.credential_json && !reentered
      ? await checkSecretOrigins(ctx, {
          actor,
          credential: row,
          secrets: json,
          links: await linksOf(ctx, row.id),
        })
      : null;
  if (input.groups) await checkGroups(ctx.db, input.groups, scope, 'credentials', { optional: true });
  await ctx.db.transaction().execute(async (trx) => {
    await connectorsRepository.updateCredential(trx, row.id, {
      name: input.name === undefined ? row.name : input.name,
      credential_json: ctx.secrets.encrypt(JSON.stringify(json)),
      admin_public: input.admin_public ?? row.admin_public,
      curator_public: input.curator_public ?? row.curator_public,
    });
    if (input.groups)
      await connectorsRepository.replaceCredentialGroups(trx, row.id, [...new Set(input.groups)]);
    if (reentered) await secretsEntered({ ...ctx, db: trx }, row.id, actor);
  });
  await applyBinding(ctx, binding);
  return getCredential({ ctx, id: row.id });
}

/** Deletes a credential no CC pair uses (400 otherwise). */
export async function deleteCredential({
  ctx,
  id,
}: {
  ctx: Deps & { actor: Actor };
  id: number;
}): Promise<void> {
  const { actor } = ctx;
  const { row } = await loadManageable(ctx, actor, id);
  if ((await connectorsRepository.countPairsOfCredential(ctx.db, row.id)) > 0) {
    throw new AppError('INVALID_INPUT', 'Credential is still used by a CC pair; delete the pair first');
  }
  await connectorsRepository.deleteCredential(ctx.db, row.id);
}
