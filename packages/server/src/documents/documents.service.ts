import { createHash } from 'node:crypto';
import type { Db, DbExecutor } from '../db/database.ts';
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

type DocumentState = NonNullable<Awaited<ReturnType<typeof documentsRepository.findDocumentState>>>;
interface Outcome {
  existed: boolean;
  changed: boolean;
}

/** Within a transaction that locked the existing row: replace it, add an owner, or leave it alone. */
async function updateExisting(
  trx: DbExecutor,
  state: DocumentState,
  row: documentsRepository.DocumentRow,
  chunks: Chunk[],
  ccPairId: number,
): Promise<Outcome> {
  if (state.content_hash === row.content_hash) {
    if (state.cc_pair_ids.includes(ccPairId)) return { existed: true, changed: false };
    await documentsRepository.addOwner(trx, row.id, ccPairId);
    await documentsRepository.recomputeAccess(trx, [row.id]);
    return { existed: true, changed: true };
  }
  await documentsRepository.upsertDocument(trx, row);
  await documentsRepository.replaceChunks(trx, row.id, chunks, false);
  await documentsRepository.addOwner(trx, row.id, ccPairId);
  await documentsRepository.recomputeAccess(trx, [row.id]);
  return { existed: true, changed: true };
}

/** Writes a document and its chunks atomically; reports whether it existed and whether anything changed. */
async function writeDocument(
  db: Db,
  row: documentsRepository.DocumentRow,
  chunks: Chunk[],
  ccPairId: number,
): Promise<Outcome> {
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
    if (state) return updateExisting(trx, state, row, chunks, ccPairId);
    const { inserted } = await documentsRepository.upsertDocument(trx, row);
    await documentsRepository.replaceChunks(trx, row.id, chunks, inserted);
    await documentsRepository.addOwner(trx, row.id, ccPairId);
    if (!inserted) await documentsRepository.recomputeAccess(trx, [row.id]);
    return { existed: !inserted, changed: true };
  });
}

/** A validated ingestion request with everything computed that needs no database. */
interface PreparedDocument {
  ccPairId: number | null;
  semanticIdentifier: string;
  /** The row without its access, which comes from the CC pair. */
  row: Omit<documentsRepository.DocumentRow, 'is_public' | 'access_user_ids' | 'access_group_ids'>;
  chunks: Chunk[];
}

function prepareDocument(input: IngestDocumentInput): PreparedDocument {
  const { document } = input;
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
  return {
    ccPairId: input.cc_pair_id ?? null,
    semanticIdentifier: document.semantic_identifier,
    chunks,
    row: {
      id,
      semantic_id: document.semantic_identifier,
      title,
      link: document.sections.find((s) => s.link)?.link ?? null,
      source,
      from_ingestion_api: true,
      metadata,
      tags: tagsOf(metadata),
      primary_owners,
      secondary_owners,
      doc_updated_at: document.doc_updated_at ?? new Date(),
      content_hash,
      chunk_count: chunks.length,
    },
  };
}

/** The CC pair a document is ingested into, or the error that refuses the request. */
async function resolvePair(
  db: DbExecutor,
  ccPairId: number | null,
): Promise<documentsRepository.CcPairAccess | AppError> {
  const pair = await documentsRepository.findCcPairAccess(db, ccPairId);
  if (!pair) {
    return new AppError(
      'INVALID_INPUT',
      ccPairId == null ? 'The system ingestion CC pair is missing' : `CC pair ${ccPairId} does not exist`,
    );
  }
  if (pair.status === 'deleting') return new AppError('INVALID_INPUT', `CC pair ${pair.id} is being deleted`);
  return pair;
}

/** A new document is owned by this pair alone; otherwise access is recomputed from all owners. */
function rowFor(
  p: PreparedDocument,
  pair: documentsRepository.CcPairAccess,
): documentsRepository.DocumentRow {
  return {
    ...p.row,
    is_public: pair.access_type === 'public',
    access_user_ids: pair.user_ids,
    access_group_ids: pair.group_ids,
  };
}

/** A new document as the index stores it: everything is already in memory. */
function indexedNew(p: PreparedDocument, pair: documentsRepository.CcPairAccess): IndexedDocument {
  return {
    document_id: p.row.id,
    semantic_identifier: p.semanticIdentifier,
    source_type: p.row.source,
    updated_at: p.row.doc_updated_at,
    tags: p.row.tags,
    document_sets: pair.document_sets,
    hidden: false,
    is_public: pair.access_type === 'public',
    access_user_ids: pair.user_ids,
    access_group_ids: pair.group_ids,
    chunks: p.chunks.map(({ chunk_id, title, content, blurb, link }) => ({
      chunk_id,
      title,
      content,
      blurb,
      link,
    })),
  };
}

interface Written {
  p: PreparedDocument;
  pair: documentsRepository.CcPairAccess;
  outcome: Outcome;
  /** Already indexed in the transaction that wrote it. */
  indexed?: boolean;
}

/** After commit: one index write for every changed document (new ones from memory, others reloaded). */
async function indexWritten(ctx: Deps, written: Written[]): Promise<void> {
  const created = written
    .filter((w) => w.outcome.changed && !w.outcome.existed && !w.indexed)
    .map((w) => indexedNew(w.p, w.pair));
  const updatedIds = written.filter((w) => w.outcome.changed && w.outcome.existed).map((w) => w.p.row.id);
  await indexDocumentsAfterCommit(ctx, created, updatedIds);
}

async function indexDocumentsAfterCommit(ctx: Deps, created: IndexedDocument[], reloadIds: string[]) {
  if (!created.length && !reloadIds.length) return;
  const loaded = reloadIds.length ? await loadIndexedDocuments(ctx, reloadIds) : [];
  const present = new Set(loaded.map((d) => d.document_id));
  const gone = reloadIds.filter((id) => !present.has(id));
  const documents = [...loaded, ...created];
  await writeIndex(ctx, [...reloadIds, ...created.map((d) => d.document_id)], async () => {
    if (documents.length) await ctx.search.indexDocuments(documents);
    if (gone.length) await ctx.search.deleteDocuments(gone);
  });
}

function resultOf(w: Written): IngestionResult {
  return { document_id: w.p.row.id, already_existed: w.outcome.existed };
}

/** One document on its own: the path of a lone request, and of each request of a batch that failed. */
async function ingestOne(ctx: Deps, p: PreparedDocument): Promise<IngestionResult> {
  const pair = await resolvePair(ctx.db, p.ccPairId);
  if (pair instanceof AppError) throw pair;
  const outcome = await writeDocument(ctx.db, rowFor(p, pair), p.chunks, pair.id);
  const written = { p, pair, outcome };
  await indexWritten(ctx, [written]);
  return resultOf(written);
}

interface Pending {
  p: PreparedDocument;
  resolve(result: IngestionResult): void;
  reject(error: unknown): void;
}

/** Most documents and chunks written by one group commit (bounds statement size and lock time). */
const BATCH_DOCUMENTS = 64;
const BATCH_CHUNKS = 2000;

/**
 * Writes several requests' documents in one transaction (group commit): one durable commit and a few
 * multi-row statements instead of several statements and a commit per document. Requests refused by
 * their CC pair are answered alone; if the transaction fails, the caller retries each one by one.
 */
async function writeBatch(
  ctx: Deps,
  batch: Pending[],
): Promise<{ written: Written[]; refused: Map<Pending, AppError> }> {
  let indexed: (() => void) | undefined;
  // The system pair's id is cached on the database (a query on it inside the transaction would wait
  // for the transaction on PGlite): known before the transaction starts.
  const systemPairId = batch.some((b) => b.p.ccPairId === null)
    ? ((await documentsRepository.systemIngestionPairId(ctx.db)) ?? null)
    : null;
  const result = await ctx.db.transaction().execute(async (trx) => {
    const pairs = new Map<number | null, documentsRepository.CcPairAccess | AppError>();
    for (const key of new Set(batch.map((b) => b.p.ccPairId))) {
      pairs.set(key, await resolvePair(trx, key ?? systemPairId));
    }
    const refused = new Map<Pending, AppError>();
    const accepted: { item: Pending; pair: documentsRepository.CcPairAccess }[] = [];
    for (const item of batch) {
      const pair = pairs.get(item.p.ccPairId)!;
      if (pair instanceof AppError) refused.set(item, pair);
      else accepted.push({ item, pair });
    }
    const states = await documentsRepository.findDocumentStates(
      trx,
      accepted.map((a) => a.item.p.row.id),
    );
    const written: Written[] = [];
    const fresh: documentsRepository.NewDocument[] = [];
    for (const { item, pair } of accepted) {
      const row = rowFor(item.p, pair);
      const state = states.get(row.id);
      const outcome = state
        ? await updateExisting(trx, state, row, item.p.chunks, pair.id)
        : { existed: false, changed: true };
      if (!state) fresh.push({ row, chunks: item.p.chunks, ccPairId: pair.id });
      written.push({ p: item.p, pair, outcome });
    }
    await documentsRepository.insertNewDocuments(trx, fresh);
    if (ctx.search.indexNewInTransaction) {
      const created = written.filter((w) => !w.outcome.existed);
      indexed = await ctx.search.indexNewInTransaction(
        trx,
        created.map((w) => indexedNew(w.p, w.pair)),
      );
      for (const w of created) w.indexed = true;
    }
    return { written, refused };
  });
  indexed?.();
  return result;
}

async function runBatch(ctx: Deps, batch: Pending[]): Promise<void> {
  if (batch.length === 1) {
    const [only] = batch as [Pending];
    await ingestOne(ctx, only.p).then(only.resolve, only.reject);
    return;
  }
  let outcome: Awaited<ReturnType<typeof writeBatch>>;
  try {
    outcome = await writeBatch(ctx, batch);
  } catch (error) {
    // Nothing was committed: each request on its own, so that one bad document fails only itself.
    if (!isUniqueViolation(error))
      ctx.logger.debug({ err: error, documents: batch.length }, 'ingestion batch failed');
    await Promise.all(batch.map((b) => ingestOne(ctx, b.p).then(b.resolve, b.reject)));
    return;
  }
  for (const [item, error] of outcome.refused) item.reject(error);
  try {
    await indexWritten(ctx, outcome.written);
  } catch (error) {
    for (const item of batch) if (!outcome.refused.has(item)) item.reject(error);
    return;
  }
  const byPrepared = new Map(outcome.written.map((w) => [w.p, w]));
  for (const item of batch) {
    const w = byPrepared.get(item.p);
    if (w) item.resolve(resultOf(w));
  }
}

/**
 * One queue per database and index: requests that arrive while batches are being written form the
 * next. Two batches may be in flight, so that the server prepares one while the database writes the
 * other (PGlite runs them one after the other anyway). Requests for one document id are written in the
 * order they arrived: an id waits while a batch holding it is in flight.
 */
interface IngestionQueue {
  pending: Pending[];
  inFlight: number;
  /** Document ids of the batches in flight. */
  busy: Set<string>;
  scheduled: boolean;
}
const BATCHES_IN_FLIGHT = 2;
const queues = new WeakMap<object, WeakMap<object, IngestionQueue>>();

function queueOf(ctx: Deps): IngestionQueue {
  let bySearch = queues.get(ctx.db);
  if (!bySearch) {
    bySearch = new WeakMap();
    queues.set(ctx.db, bySearch);
  }
  let queue = bySearch.get(ctx.search);
  if (!queue) {
    queue = { pending: [], inFlight: 0, busy: new Set(), scheduled: false };
    bySearch.set(ctx.search, queue);
  }
  return queue;
}

/** Takes the next batch: at most one request per document id (a repeated id waits for the next batch). */
function takeBatch(queue: IngestionQueue): Pending[] {
  const batch: Pending[] = [];
  const rest: Pending[] = [];
  const ids = new Set<string>();
  let chunks = 0;
  for (const item of queue.pending) {
    const full =
      batch.length >= BATCH_DOCUMENTS || (batch.length > 0 && chunks + item.p.chunks.length > BATCH_CHUNKS);
    if (full || ids.has(item.p.row.id) || queue.busy.has(item.p.row.id)) {
      rest.push(item);
      continue;
    }
    ids.add(item.p.row.id);
    chunks += item.p.chunks.length;
    batch.push(item);
  }
  queue.pending = rest;
  return batch;
}

function startBatches(ctx: Deps, queue: IngestionQueue) {
  queue.scheduled = false;
  while (queue.pending.length && queue.inFlight < BATCHES_IN_FLIGHT) {
    const batch = takeBatch(queue);
    if (!batch.length) break;
    for (const item of batch) queue.busy.add(item.p.row.id);
    queue.inFlight++;
    void runBatch(ctx, batch)
      .catch((error) => {
        for (const item of batch) item.reject(error);
      })
      .finally(() => {
        for (const item of batch) queue.busy.delete(item.p.row.id);
        queue.inFlight--;
        schedule(ctx, queue);
      });
  }
}

function schedule(ctx: Deps, queue: IngestionQueue) {
  if (queue.scheduled || !queue.pending.length || queue.inFlight >= BATCHES_IN_FLIGHT) return;
  queue.scheduled = true;
  // After the requests already received in this turn of the event loop have joined the queue.
  setImmediate(() => startBatches(ctx, queue));
}

/**
 * Posts a document: created, replaced in place, or left alone when its content hash is unchanged.
 * The document and all its chunks are written in one transaction, together with the documents of
 * concurrent requests (group commit); the answer comes after that commit. The index is updated after it.
 */
export async function ingestDocument({
  ctx,
  input,
}: {
  ctx: Deps;
  input: IngestDocumentInput;
}): Promise<IngestionResult> {
  const p = prepareDocument(input);
  const queue = queueOf(ctx);
  return new Promise<IngestionResult>((resolve, reject) => {
    queue.pending.push({ p, resolve, reject });
    schedule(ctx, queue);
  });
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
  return { documents: total };
}
