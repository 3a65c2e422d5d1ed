import type { Actor } from '../auth/roles.ts';
import { loadScope, policy } from '../auth/scope.ts';
import type { ServiceContext } from '../context.ts';
import { type DbExecutor, isUniqueViolation } from '../db/database.ts';
import * as documentsRepository from '../documents/documents.repository.ts';
import * as documentsService from '../documents/documents.service.ts';
import { AppError } from '../errors.ts';
import * as userGroupsRepository from '../user-groups/user-groups.repository.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as documentSetsRepository from './document-sets.repository.ts';
import type { CreateDocumentSetInput, DocumentSet, UpdateDocumentSetInput } from './document-sets.schemas.ts';

type Deps = ServiceContext<'db' | 'search' | 'logger' | 'ingestion'>;

function notFound(id: number): AppError {
  return new AppError('DOCUMENT_SET_NOT_FOUND', `Document set ${id} not found`);
}

async function checkReferences(
  db: DbExecutor,
  actor: Actor,
  input: { cc_pair_ids?: number[] | undefined; users?: string[] | undefined; groups?: number[] | undefined },
  /** Pairs the set already names: kept even when the actor could not name them (an admin added them). */
  kept: readonly number[] = [],
) {
  const missing = async <T>(wanted: T[] | undefined, find: (ids: T[]) => Promise<T[]>) => {
    const unique = [...new Set(wanted ?? [])];
    const found = new Set(await find(unique));
    return unique.filter((id) => !found.has(id));
  };
  // A pair the actor may not name (`policy.referenceCcPair`) answers like an absent one.
  const pairs = await missing(input.cc_pair_ids, async (ids) => {
    if (!ids.length) return [];
    const scope = await loadScope(db, actor);
    return (await documentsRepository.listCcPairGroups(db))
      .filter(
        (pair) => ids.includes(pair.id) && (kept.includes(pair.id) || policy.referenceCcPair(scope, pair)),
      )
      .map((pair) => pair.id);
  });
  if (pairs.length) throw new AppError('INVALID_INPUT', `CC pair ${pairs.join(', ')} does not exist`);
  const users = await missing(input.users, (ids) => usersRepository.findExistingUserIds(db, ids));
  if (users.length) throw new AppError('INVALID_INPUT', `User ${users.join(', ')} does not exist`);
  const groups = await missing(input.groups, (ids) => userGroupsRepository.findExistingGroupIds(db, ids));
  if (groups.length) throw new AppError('INVALID_INPUT', `User group ${groups.join(', ')} does not exist`);
}

export async function getDocumentSet({ ctx, id }: { ctx: Deps; id: number }): Promise<DocumentSet> {
  const set = await documentSetsRepository.findSet(ctx.db, id);
  if (!set) throw notFound(id);
  return set;
}

/** The sets the actor may use: all for admins; public, owned or shared with them or their groups otherwise. */
export async function listDocumentSets({ ctx }: { ctx: Deps & { actor: Actor } }): Promise<DocumentSet[]> {
  const { actor } = ctx;
  return documentSetsRepository.listSets(
    ctx.db,
    actor.role === 'admin' ? { all: true } : { all: false, user_id: actor.user_id },
  );
}

export async function createDocumentSet({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CreateDocumentSetInput;
}): Promise<DocumentSet> {
  const { actor } = ctx;
  const id = await ctx.db
    .transaction()
    .execute(async (trx) => {
      await checkReferences(trx, actor, input);
      if (await documentSetsRepository.findSetByName(trx, input.name)) {
        throw new AppError('DUPLICATE_RESOURCE', `A document set named "${input.name}" already exists`);
      }
      const { id } = await documentSetsRepository.insertSet(trx, {
        name: input.name,
        description: input.description,
        is_public: input.is_public,
        owner_id: actor.user_id,
      });
      await documentSetsRepository.replaceCcPairs(trx, id, [...new Set(input.cc_pair_ids)]);
      await documentSetsRepository.replaceUsers(trx, id, [...new Set(input.users)]);
      await documentSetsRepository.replaceGroups(trx, id, [...new Set(input.groups)]);
      return id;
    })
    .catch((error: unknown) => {
      if (isUniqueViolation(error)) {
        throw new AppError('DUPLICATE_RESOURCE', `A document set named "${input.name}" already exists`);
      }
      throw error;
    });
  await documentsService.refreshCcPairDocuments({ ctx, ccPairIds: input.cc_pair_ids });
  return getDocumentSet({ ctx, id });
}

/** Curators manage the sets they own; admins manage all. */
async function loadManageable(db: DbExecutor, actor: Actor, id: number) {
  const set = await documentSetsRepository.findSetOwner(db, id);
  if (!set) throw notFound(id);
  if (!policy.manageDocumentSet(await loadScope(db, actor), set)) {
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      'Only an admin or the curator who created it can change this document set',
    );
  }
  return set;
}

export async function updateDocumentSet({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: UpdateDocumentSetInput;
}): Promise<DocumentSet> {
  const { actor } = ctx;
  const before = await getDocumentSet({ ctx, id: input.id });
  await ctx.db
    .transaction()
    .execute(async (trx) => {
      await loadManageable(trx, actor, input.id);
      await checkReferences(trx, actor, input, before.cc_pair_ids);
      await documentSetsRepository.updateSet(trx, input.id, {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.is_public !== undefined && { is_public: input.is_public }),
      });
      if (input.cc_pair_ids)
        await documentSetsRepository.replaceCcPairs(trx, input.id, [...new Set(input.cc_pair_ids)]);
      if (input.users) await documentSetsRepository.replaceUsers(trx, input.id, [...new Set(input.users)]);
      if (input.groups) await documentSetsRepository.replaceGroups(trx, input.id, [...new Set(input.groups)]);
    })
    .catch((error: unknown) => {
      if (isUniqueViolation(error)) {
        throw new AppError('DUPLICATE_RESOURCE', `A document set named "${input.name}" already exists`);
      }
      throw error;
    });
  const after = await getDocumentSet({ ctx, id: input.id });
  await documentsService.refreshCcPairDocuments({
    ctx,
    ccPairIds: [...new Set([...before.cc_pair_ids, ...after.cc_pair_ids])],
  });
  return after;
}

export async function deleteDocumentSet({
  ctx,
  id,
}: {
  ctx: Deps & { actor: Actor };
  id: number;
}): Promise<void> {
  const { actor } = ctx;
  const before = await getDocumentSet({ ctx, id });
  await loadManageable(ctx.db, actor, id);
  await documentSetsRepository.deleteSet(ctx.db, id);
  await documentsService.refreshCcPairDocuments({ ctx, ccPairIds: before.cc_pair_ids });
}
