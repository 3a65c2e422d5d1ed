import type { Actor } from '../../auth/roles.ts';
import type { AccessType } from '../../connectors/connectors.table.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import * as documentsRepository from '../documents.repository.ts';
import type { DocMinimalInfo } from '../documents.schemas.ts';
import { assertMayChange, type DocumentsDeps as Deps, managedPairs } from './shared.ts';

/**
 * Creates a connector, credential and CC pair in one go. No endpoint yet (the connectors issue adds
 * them); ingestion into private pairs and the tests use it.
 */
export async function createCcPair({
  ctx,
  input,
}: {
  ctx: Deps;
  input: {
    name: string;
    source?: string;
    access_type: AccessType;
    creator_id?: string | null;
    group_ids?: number[];
  };
}): Promise<{ cc_pair_id: number; connector_id: number; credential_id: number }> {
  return ctx.db.transaction().execute(async (trx) => {
    const created = await documentsRepository.insertCcPair(trx, {
      name: input.name,
      source: input.source ?? 'file',
      input_type: 'load_state',
      connector_specific_config: {},
      access_type: input.access_type,
      status: 'active',
      creator_id: input.creator_id ?? null,
    });
    await documentsRepository.setCcPairGroups(trx, created.cc_pair_id, input.group_ids ?? []);
    return created;
  });
}

export async function listIngestedDocuments({
  ctx,
}: {
  ctx: ServiceContext<'dbRead'> & { actor: Actor };
}): Promise<DocMinimalInfo[]> {
  const { actor } = ctx;
  // Listings may come from a replica (never behind the last access change).
  return documentsRepository.listIngestedDocuments(ctx.dbRead, await managedPairs(ctx.dbRead, actor));
}

export async function listCcPairDocuments({
  ctx,
  ccPairId,
}: {
  ctx: ServiceContext<'dbRead'> & { actor: Actor };
  ccPairId: number;
}): Promise<DocMinimalInfo[]> {
  const { actor } = ctx;
  if (!(await documentsRepository.findExistingCcPairIds(ctx.dbRead, [ccPairId])).length) {
    throw new AppError('CC_PAIR_NOT_FOUND', `CC pair ${ccPairId} not found`);
  }
  const managed = await managedPairs(ctx.dbRead, actor);
  // A pair the curator does not manage answers exactly like an absent one.
  if (managed && !managed.includes(ccPairId))
    throw new AppError('CC_PAIR_NOT_FOUND', `CC pair ${ccPairId} not found`);
  return documentsRepository.listCcPairDocuments(ctx.dbRead, ccPairId);
}

/** Deletes an API-ingested document completely, whatever other pairs own it. */
export async function deleteIngestedDocument({
  ctx,
  documentId,
}: {
  ctx: Deps & { actor: Actor };
  documentId: string;
}) {
  const { actor } = ctx;
  const origin = await documentsRepository.findDocumentOrigin(ctx.db, documentId);
  if (!origin) throw new AppError('DOCUMENT_NOT_FOUND', `Document ${documentId} not found`);
  await assertMayChange(ctx.db, actor, documentId);
  if (!origin.from_ingestion_api) {
    throw new AppError('INVALID_INPUT', 'Document was not created via the ingestion API');
  }
  await documentsRepository.deleteDocument(ctx.db, documentId);
  await ctx.search.deleteDocuments([documentId]);
}
