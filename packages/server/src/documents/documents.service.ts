import { createHash } from 'node:crypto';
import type { Db } from '../db/database.ts';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { encodeTag, type IndexedDocument, type SearchIndex } from '../search/search-index.ts';
import { type Chunk, chunkDocument } from './chunking.ts';
import * as documentsRepository from './documents.repository.ts';
import type {
  DocMinimalInfo,
  IngestDocumentInput,
  IngestedDocument,
  IngestionResult,
} from './documents.schemas.ts';
import type { AccessType, Owner } from './documents.table.ts';

interface Deps {
  db: Db;
  search: SearchIndex;
  logger: Logger;
}

const DEFAULT_SOURCE = 'file';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Same content, same id: the same document posted twice without an id is one document. */
export function deriveDocumentId(document: IngestedDocument): string {
  const content = JSON.stringify([
    document.semantic_identifier,
    document.sections.map((s) => [s.text, s.link ?? null]),
  ]);
  return `ingestion_api_${sha256(content).slice(0, 32)}`;
}

function normaliseMetadata(metadata: IngestedDocument['metadata']): Record<string, string | string[]> {
  return Object.fromEntries(Object.entries(metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function tagsOf(metadata: Record<string, string | string[]>): string[] {
  const tags = new Set<string>();
  for (const [key, value] of Object.entries(metadata)) {
    for (const v of Array.isArray(value) ? value : [value])
      tags.add(encodeTag({ tag_key: key, tag_value: v }));
  }
  return [...tags];
}

function ownersOf(owners: IngestedDocument['primary_owners']): Owner[] {
  return (owners ?? []).map((o) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)),
  ) as Owner[];
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === '23505';
}

/** Writes a document and its chunks atomically; reports whether it existed and whether anything changed. */
async function writeDocument(
  db: Db,
  row: documentsRepository.DocumentRow,
  chunks: Chunk[],
  ccPairId: number,
): Promise<{ existed: boolean; changed: boolean }> {
  // The common case of bulk ingestion, a new id, is one statement.
  if (!(await documentsRepository.findDocumentState(db, row.id))) {
    try {
      await documentsRepository.insertNewDocument(db, row, chunks, ccPairId);
      return { existed: false, changed: true };
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // Created concurrently: continue as an update.
    }
  }
  return db.transaction().execute(async (trx) => {
    const state = await documentsRepository.findDocumentState(trx, row.id);
    if (state && state.content_hash === row.content_hash) {
      if (state.cc_pair_ids.includes(ccPairId)) return { existed: true, changed: false };
      await documentsRepository.addOwner(trx, row.id, ccPairId);
      await documentsRepository.recomputeAccess(trx, [row.id]);
      return { existed: true, changed: true };
    }
    const { inserted } = await documentsRepository.upsertDocument(trx, row);
    await documentsRepository.replaceChunks(trx, row.id, chunks, inserted);
    await documentsRepository.addOwner(trx, row.id, ccPairId);
    if (!inserted) await documentsRepository.recomputeAccess(trx, [row.id]);
    return { existed: !inserted, changed: true };
  });
}

/**
 * Posts a document: created, replaced in place, or left alone when its content hash is unchanged.
 * The document and all its chunks are written in one transaction; the index is updated after commit.
 */
export async function ingestDocument({
  ctx,
  input,
}: {
  ctx: Deps;
  input: IngestDocumentInput;
}): Promise<IngestionResult> {
  const { document } = input;
  const pair = await documentsRepository.findCcPairAccess(ctx.db, input.cc_pair_id ?? null);
  if (!pair) {
    throw new AppError(
      'INVALID_INPUT',
      input.cc_pair_id == null
        ? 'The system ingestion CC pair is missing'
        : `CC pair ${input.cc_pair_id} does not exist`,
    );
  }
  if (pair.status === 'deleting') throw new AppError('INVALID_INPUT', `CC pair ${pair.id} is being deleted`);

  const id = document.id ?? deriveDocumentId(document);
  const title = document.title?.trim() || document.semantic_identifier;
  const metadata = normaliseMetadata(document.metadata);
  const primary_owners = ownersOf(document.primary_owners);
  const secondary_owners = ownersOf(document.secondary_owners);
  const source = document.source ?? DEFAULT_SOURCE;
  const content_hash = sha256(
    JSON.stringify([
      document.semantic_identifier,
      title,
      source,
      document.sections.map((s) => [s.text, s.link ?? null]),
      metadata,
      primary_owners,
      secondary_owners,
    ]),
  );

  const chunks = chunkDocument({ title, sections: document.sections });
  const tags = tagsOf(metadata);
  const doc_updated_at = document.doc_updated_at ?? new Date();
  const row: documentsRepository.DocumentRow = {
    id,
    semantic_id: document.semantic_identifier,
    title,
    link: document.sections.find((s) => s.link)?.link ?? null,
    source,
    from_ingestion_api: true,
    metadata,
    tags,
    primary_owners,
    secondary_owners,
    doc_updated_at,
    content_hash,
    chunk_count: chunks.length,
    // A new document is owned by this pair alone; otherwise access is recomputed from all owners.
    is_public: pair.access_type === 'public',
    access_user_ids: pair.user_ids,
    access_group_ids: pair.group_ids,
  };
  const outcome = await writeDocument(ctx.db, row, chunks, pair.id);
  if (!outcome.changed) return { document_id: id, already_existed: true };
  if (outcome.existed) {
    await syncIndex({ ctx, documentIds: [id] });
  } else {
    // A new document is owned by this pair alone: everything the index needs is already in memory.
    await writeIndex(ctx, [id], () =>
      ctx.search.indexDocuments([
        {
          document_id: id,
          semantic_identifier: document.semantic_identifier,
          source_type: source,
          updated_at: doc_updated_at,
          tags,
          document_sets: pair.document_sets,
          hidden: false,
          is_public: pair.access_type === 'public',
          access_user_ids: pair.user_ids,
          access_group_ids: pair.group_ids,
          chunks: chunks.map(({ chunk_id, title, content, blurb, link }) => ({
            chunk_id,
            title,
            content,
            blurb,
            link,
          })),
        },
      ]),
    );
  }
  return { document_id: id, already_existed: outcome.existed };
}

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

export async function listIngestedDocuments({ ctx }: { ctx: Deps }): Promise<DocMinimalInfo[]> {
  return documentsRepository.listIngestedDocuments(ctx.db);
}

export async function listCcPairDocuments({
  ctx,
  ccPairId,
}: {
  ctx: Deps;
  ccPairId: number;
}): Promise<DocMinimalInfo[]> {
  if (!(await documentsRepository.ccPairExists(ctx.db, ccPairId))) {
    throw new AppError('CC_PAIR_NOT_FOUND', `CC pair ${ccPairId} not found`);
  }
  return documentsRepository.listCcPairDocuments(ctx.db, ccPairId);
}

/** Deletes an API-ingested document completely, whatever other pairs own it. */
export async function deleteIngestedDocument({ ctx, documentId }: { ctx: Deps; documentId: string }) {
  const origin = await documentsRepository.findDocumentOrigin(ctx.db, documentId);
  if (!origin) throw new AppError('DOCUMENT_NOT_FOUND', `Document ${documentId} not found`);
  if (!origin.from_ingestion_api) {
    throw new AppError('INVALID_INPUT', 'Document was not created via the ingestion API');
  }
  await documentsRepository.deleteDocument(ctx.db, documentId);
  await ctx.search.deleteDocuments([documentId]);
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
    chunks: chunksByDocument.get(d.id) ?? [],
  }));
}

/** Brings the index up to date for these documents (after their rows committed). */
export async function syncIndex({ ctx, documentIds }: { ctx: Deps; documentIds: string[] }): Promise<void> {
  if (!documentIds.length) return;
  const documents = await loadIndexedDocuments(ctx, documentIds);
  const present = new Set(documents.map((d) => d.document_id));
  const gone = documentIds.filter((id) => !present.has(id));
  await writeIndex(ctx, documentIds, async () => {
    if (documents.length) await ctx.search.indexDocuments(documents);
    if (gone.length) await ctx.search.deleteDocuments(gone);
  });
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
  return { documents: total };
}
