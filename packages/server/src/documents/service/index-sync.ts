import type { Db } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import type { IndexedDocument } from '../../search/search-index.ts';
import * as documentsRepository from '../documents.repository.ts';
import type { DocumentsDeps } from './shared.ts';

type Deps = Pick<DocumentsDeps, 'db' | 'search' | 'logger'>;

export async function indexDocumentsAfterCommit(
  ctx: Deps,
  created: IndexedDocument[],
  reloadIds: string[],
  /** Words of reloaded documents computed already (large ones, in the CPU pool), by id. */
  vocabularies?: ReadonlyMap<string, string>,
) {
  if (!created.length && !reloadIds.length) return;
  const loaded = reloadIds.length ? await loadIndexedDocuments(ctx, reloadIds) : [];
  for (const document of loaded) document.vocabulary ??= vocabularies?.get(document.document_id);
  const present = new Set(loaded.map((d) => d.document_id));
  const gone = reloadIds.filter((id) => !present.has(id));
  const documents = [...loaded, ...created];
  await writeIndex(ctx, [...reloadIds, ...created.map((d) => d.document_id)], async () => {
    if (documents.length) await ctx.search.indexDocuments(documents);
    if (gone.length) await ctx.search.deleteDocuments(gone);
  });
}

/** The documents as the index stores them, read from Postgres. */
export async function loadIndexedDocuments(
  ctx: { db: Db },
  documentIds: string[],
): Promise<IndexedDocument[]> {
  const { documents, chunks } = await documentsRepository.loadIndexedDocuments(ctx.db, documentIds);
  const chunksByDocument = new Map<string, IndexedDocument['chunks']>();
  for (const { document_id, ...chunk } of chunks) {
    const list = chunksByDocument.get(document_id) ?? [];
    if (!list.length) chunksByDocument.set(document_id, list);
    list.push(chunk);
  }
  return documents.map((d) => ({
    document_id: d.id,
    semantic_identifier: d.semantic_id,
    source_type: d.source,
    updated_at: new Date(d.doc_updated_at),
    tags: d.tags,
    document_sets: d.document_sets,
    hidden: d.hidden,
    is_public: d.is_public,
    access_user_ids: d.access_user_ids,
    access_group_ids: d.access_group_ids,
    access_external: d.access_external,
    chunks: chunksByDocument.get(d.id) ?? [],
  }));
}

/** Brings the index up to date for these documents (after their rows committed). */
export async function syncIndex({ ctx, documentIds }: { ctx: Deps; documentIds: string[] }): Promise<void> {
  await indexDocumentsAfterCommit(ctx, [], documentIds);
}

/** Runs an index write; on failure the documents are marked so that re-posting them indexes again. */
async function writeIndex(ctx: Deps, documentIds: string[], write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    ctx.logger.error({ err: error, documents: documentIds.length }, 'search index update failed');
    // A retry of the same content must not be skipped by the unchanged-hash check.
    await documentsRepository.forgetContentHash(ctx.db, documentIds).catch(() => {});
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      'The document was stored but the search index could not be updated; retry or run `kas reindex`',
      { cause: error },
    );
  }
}

/** Access or document-set membership of these CC pairs' documents changed: refresh them everywhere. */
export async function refreshCcPairDocuments({ ctx, ccPairIds }: { ctx: Deps; ccPairIds: number[] }) {
  const ids = await documentsRepository.documentIdsOfCcPairs(ctx.db, ccPairIds);
  for (let i = 0; i < ids.length; i += 500) {
    const batch = ids.slice(i, i + 500);
    await documentsRepository.recomputeAccess(ctx.db, batch);
    if (ctx.search.kind !== 'postgres') await syncIndex({ ctx, documentIds: batch });
  }
}

/** Rebuilds the whole search index from Postgres (`kas reindex`). */
export async function reindexAll({
  ctx,
  batchSize = 200,
  onProgress,
}: {
  ctx: Deps;
  batchSize?: number;
  onProgress?: (indexed: number) => void;
}): Promise<{ documents: number }> {
  await ctx.search.clear();
  let after: string | null = null;
  let total = 0;
  for (;;) {
    const ids = await documentsRepository.listDocumentIdsAfter(ctx.db, after, batchSize);
    if (!ids.length) break;
    await ctx.search.indexDocuments(await loadIndexedDocuments(ctx, ids));
    total += ids.length;
    after = ids.at(-1)!;
    onProgress?.(total);
  }
  // Statistics, weights and champion lists current before the command returns.
  await ctx.search.maintain?.();
  return { documents: total };
}
