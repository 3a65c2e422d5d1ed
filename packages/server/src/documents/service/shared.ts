import type { Actor } from '../../auth/roles.ts';
import { loadScope, policy } from '../../auth/scope.ts';
import type { ServiceContext } from '../../context.ts';
import type { DbExecutor } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import * as documentsRepository from '../documents.repository.ts';

/**
 * What the documents services use of the application; the statement gate when the caller has it
 * (bulk ingestion's extra writers, `service/ingest.ts`).
 */
export type DocumentsDeps = ServiceContext<
  'db' | 'search' | 'logger' | 'ingestion' | 'cpu' | 'config' | 'dbKind'
> &
  Partial<ServiceContext<'dbGate' | 'textThread'>>;

/**
 * The CC pairs whose documents the actor may read and change through the ingestion API: all for
 * admins (null), otherwise those `policy.manageCcPair` gives them (pairs of groups they curate, every
 * one). Public pairs without groups, the ingestion API's own pair among them, are admin-only.
 */
export async function managedPairs(db: DbExecutor, actor: Actor): Promise<number[] | null> {
  const scope = await loadScope(db, actor);
  if (scope.admin) return null;
  return (await documentsRepository.listCcPairGroups(db))
    .filter((pair) => policy.manageCcPair(scope, pair))
    .map((pair) => pair.id);
}

/**
 * A curator ingests only into a pair they manage (one they do not manage answers like an absent
 * pair); the ingestion API's own pair is admin-only. An existing document with that id must be one
 * they may change (`assertMayChange`).
 */
export async function assertMayIngest(
  db: DbExecutor,
  actor: Actor,
  change: { documentId: string; targetPairId?: number | null },
): Promise<void> {
  const scope = await loadScope(db, actor);
  if (scope.admin) return;
  if (change.targetPairId == null)
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      'Curators ingest into a CC pair of groups they curate: name it in `cc_pair_id`',
    );
  const managed = await managedPairs(db, actor);
  if (!managed?.includes(change.targetPairId))
    throw new AppError('INVALID_INPUT', `CC pair ${change.targetPairId} does not exist`);
  await assertMayChange(db, actor, change.documentId);
}

/**
 * A curator replaces or deletes a document only when they manage every pair owning it
 * (`policy.manageDocument`); otherwise it answers like an absent document. Re-ingesting a private
 * document's id into another pair would publish it, and an admin's document is not theirs to change.
 */
export async function assertMayChange(db: DbExecutor, actor: Actor, documentId: string): Promise<void> {
  const scope = await loadScope(db, actor);
  if (scope.admin) return;
  const owners = await documentsRepository.ownerPairsOf(db, documentId);
  if (owners.length && !policy.manageDocument(scope, owners))
    throw new AppError('DOCUMENT_NOT_FOUND', `Document ${documentId} not found`);
}
