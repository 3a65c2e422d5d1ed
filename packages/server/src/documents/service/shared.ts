import type { Actor } from '../../auth/roles.ts';
import type { AppDeps } from '../../context.ts';
import type { DbExecutor } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import * as userGroupsRepository from '../../user-groups/user-groups.repository.ts';
import * as documentsRepository from '../documents.repository.ts';

/** What the documents services use of the application. */
export type DocumentsDeps = Pick<AppDeps, 'db' | 'search' | 'logger' | 'ingestion'>;

/**
 * The CC pairs whose documents the actor may read and change through the ingestion API: all for
 * admins (null), otherwise public pairs (whose documents everyone sees anyway) and the pairs of the
 * groups they curate: a private pair of another group stays out of reach.
 */
export async function managedPairs(db: DbExecutor, actor: Actor): Promise<number[] | null> {
  if (actor.role === 'admin') return null;
  return documentsRepository.managedCcPairIds(
    db,
    await userGroupsRepository.curatedGroupIdsOfUser(db, actor.user_id),
  );
}

/**
 * A curator may write into a pair they manage, and may replace or delete an existing document only
 * when every pair owning it is one they manage: otherwise re-ingesting a private document's id into
 * the public pair would publish it.
 */
export async function assertMayChange(
  db: DbExecutor,
  managed: number[] | null,
  change: { documentId: string; targetPairId?: number | null },
): Promise<void> {
  if (managed === null) return;
  if (change.targetPairId != null && !managed.includes(change.targetPairId))
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      `Curators ingest only into CC pairs of groups they curate (CC pair ${change.targetPairId})`,
    );
  if ((await documentsRepository.ownersOutside(db, change.documentId, managed)).length)
    throw new AppError('DOCUMENT_NOT_FOUND', `Document ${change.documentId} not found`);
}
