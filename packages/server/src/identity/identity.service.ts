import * as apiKeysRepository from '../api-keys/api-keys.repository.ts';
import {
  displayCredential,
  earliestExpiry,
  expiryFrom,
  generatePersonalToken,
  hashCredential,
} from '../auth/credential.ts';
import type { Actor } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import type { Db } from '../db/database.ts';
import * as documentsService from '../documents/documents.service.ts';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { SearchIndex } from '../search/search-index.ts';
import * as identityRepository from './identity.repository.ts';
import type { CreatePersonalTokenInput, PersonalAccessToken } from './identity.schemas.ts';

type Deps = ServiceContext<'db'> & Partial<ServiceContext<'authCache'>>;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function toToken(
  row: Awaited<ReturnType<typeof identityRepository.listTokens>>[number],
): PersonalAccessToken {
  return {
    id: row.id,
    name: row.name,
    token_display: row.display,
    created_at: new Date(row.created_at).toISOString(),
    expires_at: iso(row.expires_at),
    last_used_at: iso(row.last_used_at),
  };
}

/**
 * A new personal access token for a person, given by an admin from the command line (who checked it
 * is a person); the only response that carries the full token.
 */
export async function createPersonalToken({
  ctx,
  userId,
  input,
}: {
  ctx: Deps;
  userId: string;
  input: CreatePersonalTokenInput;
}): Promise<PersonalAccessToken> {
  return insertToken(ctx, { userId, input, expiresAt: expiryFrom(input.expiration_days), apiKeyId: null });
}

/**
 * A new token for the caller, never stronger or longer-lived than the credential that asks: it
 * expires no later than that credential (a longer or absent lifetime is shortened to it), and a key's
 * service account gets one only when an admin allows it on the key (the token then dies with the key). An OIDC sign-in is the person themself, re-verified by the provider on
 * every request, so its token's short `exp` does not bound the tokens they create.
 */
export async function createOwnPersonalToken({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CreatePersonalTokenInput;
}): Promise<PersonalAccessToken> {
  const { actor } = ctx;
  if (
    actor.bound_api_key_id !== null &&
    !(await apiKeysRepository.findKey(ctx.db, actor.bound_api_key_id))?.allow_personal_tokens
  ) {
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      'This API key (service account) may not create personal access tokens; an admin can allow it ' +
        'with allow_personal_tokens on the key, or use the key itself',
    );
  }
  const limit = actor.credential === 'oidc' ? null : actor.expires_at;
  return insertToken(ctx, {
    userId: actor.user_id,
    input,
    expiresAt: earliestExpiry(expiryFrom(input.expiration_days), limit),
    apiKeyId: actor.bound_api_key_id,
  });
}

async function insertToken(
  ctx: Deps,
  args: { userId: string; input: CreatePersonalTokenInput; expiresAt: Date | null; apiKeyId: number | null },
): Promise<PersonalAccessToken> {
  const token = generatePersonalToken();
  const row = await identityRepository.insertToken(ctx.db, {
    user_id: args.userId,
    name: args.input.name,
    hashed_token: hashCredential(token),
    display: displayCredential(token),
    expires_at: args.expiresAt,
    created_by_api_key_id: args.apiKeyId,
  });
  return { ...toToken(row), token };
}

export async function listPersonalTokens({
  ctx,
}: {
  ctx: Deps & { actor: Actor };
}): Promise<PersonalAccessToken[]> {
  return (await identityRepository.listTokens(ctx.db, ctx.actor.user_id)).map(toToken);
}

/** Revokes one of the caller's own tokens; another user's token is "not found", never revealed. */
export async function revokePersonalToken({
  ctx,
  id,
}: {
  ctx: Deps & { actor: Actor };
  id: number;
}): Promise<void> {
  const deleted = await identityRepository.deleteToken(ctx.db, ctx.actor.user_id, id);
  await ctx.authCache?.invalidate();
  if (!deleted) throw new AppError('TOKEN_NOT_FOUND', `Personal access token ${id} not found`);
}

/** Links a user to their account at a source (connectors call this when a source names a person). */
export async function linkExternalIdentity({
  ctx,
  identity,
}: {
  ctx: Deps;
  identity: { user_id: string; source: string; external_id: string };
}): Promise<void> {
  await identityRepository.linkIdentity(ctx.db, identity);
}

export async function unlinkExternalIdentity({
  ctx,
  identity,
}: {
  ctx: Deps;
  identity: { user_id: string; source: string; external_id: string };
}): Promise<void> {
  await identityRepository.unlinkIdentity(ctx.db, identity);
}

/**
 * Replaces the external groups one CC pair's permission sync found at a source: each group with its
 * members as principals (`emailPrincipal`, `userPrincipal`). Atomic: readers see the old or the new set.
 */
export async function replaceExternalGroupMembers({
  ctx,
  cc_pair_id,
  source,
  groups,
}: {
  ctx: Deps;
  cc_pair_id: number | null;
  source: string;
  groups: readonly { group_id: string; members: readonly string[] }[];
}): Promise<void> {
  await ctx.db
    .transaction()
    .execute((trx) => identityRepository.replaceExternalGroupMembers(trx, { cc_pair_id, source, groups }));
}

/**
 * Sets which external principals may see each document (a `sync` source's permissions) and brings the
 * search index up to date for them.
 */
export async function setDocumentExternalAccess({
  ctx,
  entries,
}: {
  ctx: { db: Db; search: SearchIndex; logger: Logger };
  entries: readonly { document_id: string; principals: readonly string[] }[];
}): Promise<void> {
  if (!entries.length) return;
  await ctx.db.transaction().execute((trx) => identityRepository.setDocumentExternalAccess(trx, entries));
  await documentsService.syncIndex({ ctx, documentIds: entries.map((e) => e.document_id) });
}
