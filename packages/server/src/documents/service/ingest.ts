import { availableParallelism } from 'node:os';
import type { Actor } from '../../auth/roles.ts';
import { type DbExecutor, inBackground, isUniqueViolation, retryOnConflict } from '../../db/database.ts';
import { AppError, toErrorResponse } from '../../errors.ts';
import type { Chunk } from '../chunking.ts';
import * as documentsRepository from '../documents.repository.ts';
import type {
  BatchIngestionResult,
  IngestBatchInput,
  IngestBatchOutput,
  IngestDocumentInput,
  IngestedDocument,
  IngestionResult,
} from '../documents.schemas.ts';
import type { IngestionState, QueuedIngestion, VectorisedChunk } from '../ingestion-queue.ts';
import { indexDocumentsAfterCommit } from './index-sync.ts';
import {
  type ExternalAccessInput,
  indexedNew,
  type PreparedDocument,
  prepareDocument,
  rowFor,
} from './prepare.ts';
import { assertMayIngest, type DocumentsDeps as Deps } from './shared.ts';

interface Outcome {
  existed: boolean;
  changed: boolean;
}

/** Within a transaction that locked the existing row: replace it, add an owner, or leave it alone. */
async function updateExisting(
  trx: DbExecutor,
  state: documentsRepository.DocumentState,
  row: documentsRepository.DocumentRow,
  chunks: Chunk[],
  ccPairId: number,
  perStatement: number,
): Promise<Outcome> {
  if (state.pending) {
    // Left by a staged write that never finished: replaced whole, as if new.
    await documentsRepository.upsertDocument(trx, row);
    await documentsRepository.replaceChunks(trx, row.id, chunks, false, perStatement);
    await documentsRepository.addOwner(trx, row.id, ccPairId);
    await documentsRepository.recomputeAccess(trx, [row.id]);
    return { existed: false, changed: true };
  }
  if (state.content_hash === row.content_hash) {
    if (state.cc_pair_ids.includes(ccPairId)) return { existed: true, changed: false };
    await documentsRepository.addOwner(trx, row.id, ccPairId);
    await documentsRepository.recomputeAccess(trx, [row.id]);
    return { existed: true, changed: true };
  }
  await documentsRepository.upsertDocument(trx, row);
  await documentsRepository.replaceChunks(trx, row.id, chunks, false, perStatement);
  await documentsRepository.addOwner(trx, row.id, ccPairId);
  await documentsRepository.recomputeAccess(trx, [row.id]);
  return { existed: true, changed: true };
}

/**
 * Chunks written by one statement of a transaction. On Postgres a request's statements run beside
 * them, but a background statement already running keeps its CPU (`KAS_BACKGROUND_YIELD_MS` holds back
 * only the next one): 64 chunks (~100–200 ms of a Postgres process on a loaded 2-core machine) rather
 * than 256, with no loss of ingestion speed measured; the parameters of each are encoded on the event
 * loop in a few milliseconds. The embedded database hands its one connection to a whole transaction
 * (`ConnectionLock`), so smaller statements within one let no search in: all of a transaction's chunks
 * go in one statement there, which cost its thread ~25 % less CPU per ~300-word document than 16 chunks
 * per statement (1.65–1.98 ms instead of 2.3–2.6 for the group's writes: each statement is planned, and
 * captures its rows for the statement trigger). Large new documents are written in stages instead,
 * outside a transaction (`writeStaged`).
 */
const PGLITE_CHUNKS_PER_STATEMENT = Number.POSITIVE_INFINITY;
const POSTGRES_CHUNKS_PER_STATEMENT = 64;

function chunksPerStatement(ctx: Pick<Deps, 'dbKind'>): number {
  return ctx.dbKind === 'pglite' ? PGLITE_CHUNKS_PER_STATEMENT : POSTGRES_CHUNKS_PER_STATEMENT;
}

/** Whether a new document of this many chunks is written in stages (`writeStaged`). */
function isStaged(ctx: Pick<Deps, 'dbKind'>, chunks: number): boolean {
  return ctx.dbKind === 'pglite' && chunks > STAGED_MIN_CHUNKS;
}

/**
 * New documents of more chunks than this are written in stages on the embedded database
 * (`writeStaged`). Measured there (2 cores, a 5 MB document of 2,505 chunks): 8 chunks per statement
 * take ~9 ms (p50; p99 ~25–80 ms when the statement also merges the full-text index's pending list),
 * so a search waits for at most one or two such statements, where it waited for a whole document's
 * transaction (3–7 s) before.
 */
const STAGED_MIN_CHUNKS = 64;
const STAGED_CHUNKS_PER_STATEMENT = 8;

/**
 * A large new document on the embedded database, written so that no statement or transaction holds
 * its only connection for more than a few milliseconds, yet readers never see half of it: the row is
 * inserted `pending` (every reader skips it), the chunks follow in small statements of their own, and
 * one short transaction adds the owner and publishes it. If anything fails, the pending row and its
 * chunks are deleted; after a crash, start-up deletes them (`discardPendingDocuments`).
 * Undefined when a document with that id exists (the caller replaces it in one transaction).
 */
async function writeStaged(
  ctx: Pick<Deps, 'db' | 'logger'>,
  row: documentsRepository.DocumentRow,
  chunks: Chunk[],
  ccPairId: number,
): Promise<Outcome | undefined> {
  const { db } = ctx;
  if (await documentsRepository.findDocumentState(db, row.id)) return undefined;
  try {
    await documentsRepository.insertPendingDocument(db, row);
  } catch (error) {
    if (isUniqueViolation(error)) return undefined;
    throw error;
  }
  try {
    for (let i = 0; i < chunks.length; i += STAGED_CHUNKS_PER_STATEMENT) {
      await documentsRepository.insertChunks(db, row.id, chunks.slice(i, i + STAGED_CHUNKS_PER_STATEMENT));
    }
    await db.transaction().execute(async (trx) => {
      await documentsRepository.addOwner(trx, row.id, ccPairId);
      // Nothing deletes a pending document but this function (readers and deletes skip it).
      if (!(await documentsRepository.publishDocument(trx, row.id)))
        throw new Error('a pending document disappeared before it was published');
    });
  } catch (error) {
    await documentsRepository
      .deletePendingDocuments(db, row.id)
      .catch((cause: unknown) => ctx.logger.warn({ err: cause }, 'a pending document could not be deleted'));
    throw error;
  }
  return { existed: false, changed: true };
}

/**
 * Deletes the documents that staged writes left pending (a crash between their first and last
 * transaction): at start-up, before any request, so none of them is being written.
 */
export async function discardPendingDocuments({ ctx }: { ctx: Pick<Deps, 'db' | 'logger'> }): Promise<void> {
  const deleted = await documentsRepository.deletePendingDocuments(ctx.db);
  if (deleted) ctx.logger.info({ documents: deleted }, 'deleted documents whose writing was interrupted');
}

/** Writes a document and its chunks atomically; reports whether it existed and whether anything changed. */
async function writeDocument(
  ctx: Pick<Deps, 'db' | 'logger' | 'dbKind'>,
  row: documentsRepository.DocumentRow,
  chunks: Chunk[],
  ccPairId: number,
  perStatement: number,
): Promise<Outcome> {
  const { db } = ctx;
  if (isStaged(ctx, chunks.length)) {
    const staged = await writeStaged(ctx, row, chunks, ccPairId);
    if (staged) return staged;
  }
  // The common case of bulk ingestion, a new id, is one statement.
  if (chunks.length <= perStatement && !(await documentsRepository.findDocumentState(db, row.id))) {
    try {
      await documentsRepository.insertNewDocument(db, row, chunks, ccPairId);
      return { existed: false, changed: true };
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // Created concurrently: continue as an update.
    }
  }
  return retryOnConflict(() =>
    db.transaction().execute(async (trx) => {
      const state = await documentsRepository.findDocumentState(trx, row.id);
      if (state) return updateExisting(trx, state, row, chunks, ccPairId, perStatement);
      const { inserted } = await documentsRepository.upsertDocument(trx, row);
      await documentsRepository.replaceChunks(trx, row.id, chunks, inserted, perStatement);
      await documentsRepository.addOwner(trx, row.id, ccPairId);
      if (!inserted) await documentsRepository.recomputeAccess(trx, [row.id]);
      return { existed: !inserted, changed: true };
    }),
  );
}

/** The CC pair a document is ingested into, or the error that refuses the request. */
async function resolvePair(
  db: DbExecutor,
  ccPairId: number | null,
): Promise<documentsRepository.CcPairAccess | AppError> {
  const pair = ccPairId == null ? undefined : await documentsRepository.findCcPairAccess(db, ccPairId);
  if (!pair) {
    return new AppError(
      'INVALID_INPUT',
      ccPairId == null ? 'The system ingestion CC pair is missing' : `CC pair ${ccPairId} does not exist`,
    );
  }
  if (pair.status === 'deleting') return new AppError('INVALID_INPUT', `CC pair ${pair.id} is being deleted`);
  return pair;
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
  const updated = written.filter((w) => w.outcome.changed && w.outcome.existed);
  const vocabularies = new Map(updated.map((w) => [w.p.row.id, w.p.vocabulary] as const));
  await indexDocumentsAfterCommit(
    ctx,
    created,
    updated.map((w) => w.p.row.id),
    vocabularies,
  );
}

function resultOf(w: Written): IngestionResult {
  return { document_id: w.p.row.id, already_existed: w.outcome.existed };
}

/** One document on its own: the path of a lone request, and of each request of a batch that failed. */
async function ingestOne(ctx: Deps, p: PreparedDocument): Promise<IngestionResult> {
  const pair = await resolvePair(ctx.db, p.ccPairId ?? (await systemPairIdOf(ctx)) ?? null);
  if (pair instanceof AppError) throw pair;
  const outcome = await writeDocument(ctx, rowFor(p, pair), p.chunks, pair.id, chunksPerStatement(ctx));
  const written = { p, pair, outcome };
  await indexWritten(ctx, [written]);
  return resultOf(written);
}

/** A queued request: the prepared document and its caller's promise. */
interface Pending extends QueuedIngestion {
  p: PreparedDocument;
  resolve(result: IngestionResult): void;
  reject(error: unknown): void;
}

/**
 * Most documents and chunks written by one group commit (bounds statement size and lock time). The
 * search statistics gain one delta row per distinct term of a group (`insertNewDocuments`), which
 * maintenance folds and deletes again: ~300-word documents bring 42 rows per document in groups of 64,
 * 15 in groups of 256 (words follow Zipf's law), so on Postgres groups of 256 cost the database ~20 %
 * less CPU per document (1.10 → 0.87 ms, 8 clients posting batches of 100). On the embedded database a
 * group's transaction holds the only connection (searches wait for all of it): 64 there, which measured
 * no worse per document.
 */
const POSTGRES_BATCH_DOCUMENTS = 256;
const PGLITE_BATCH_DOCUMENTS = 64;
const BATCH_CHUNKS = 2000;

function batchDocuments(ctx: Pick<Deps, 'dbKind'>): number {
  return ctx.dbKind === 'pglite' ? PGLITE_BATCH_DOCUMENTS : POSTGRES_BATCH_DOCUMENTS;
}

/**
 * Writes several requests' documents in one transaction (group commit): one durable commit and a few
 * multi-row statements instead of several statements and a commit per document. Requests refused by
 * their CC pair are answered alone; if the transaction fails, the caller retries each one by one.
 */
async function writeBatch(
  ctx: Deps,
  batch: Pending[],
  perStatement: number,
): Promise<{ written: Written[]; refused: Map<Pending, AppError> }> {
  // The search index's part of writing new documents, prepared before the transaction holds a connection.
  const inIndex = ctx.search.newInTransaction?.(batch.map((b) => b.p));
  // The system pair's id is cached (a query on it inside the transaction would wait for the
  // transaction on PGlite): known before the transaction starts.
  const systemPairId = batch.some((b) => b.p.ccPairId === null)
    ? ((await systemPairIdOf(ctx)) ?? null)
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
        ? await updateExisting(trx, state, row, item.p.chunks, pair.id, perStatement)
        : { existed: false, changed: true };
      if (!state) fresh.push({ row, chunks: item.p.chunks, ccPairId: pair.id });
      written.push({ p: item.p, pair, outcome });
    }
    await documentsRepository.insertNewDocuments(trx, fresh, perStatement);
    if (inIndex) {
      await inIndex.write(trx);
      for (const w of written) if (!w.outcome.existed) w.indexed = true;
    }
    return { written, refused };
  });
  inIndex?.committed();
  return result;
}

async function runBatch(ctx: Deps, batch: Pending[], perStatement: number): Promise<void> {
  if (batch.length === 1) {
    const [only] = batch as [Pending];
    await ingestOne(ctx, only.p).then(only.resolve, only.reject);
    return;
  }
  let outcome: Awaited<ReturnType<typeof writeBatch>>;
  try {
    outcome = await writeBatch(ctx, batch, perStatement);
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
 * Batches written at once (`KAS_INGEST_WRITERS`; by default half the cores, at least 1). Each runs a
 * writing transaction, which on Postgres keeps one server process busy (indexing ~1–2 ms per chunk): on
 * 2 cores two such writers left a search's own process a third of the CPU, and its bare statements'
 * p99 rose from 19 to 131 ms while 8 clients ingested 5 MB documents. One batch is still being written
 * while the next one gathers the requests that arrive meanwhile (group commit).
 *
 * A bulk load on Postgres (`bulkLoad`) gets `KAS_BULK_INGEST_WRITERS` (by default the machine's cores,
 * at least 2), each extra writer with a background turn of its own (`StatementGate.extraTurns`): with
 * nobody searching, one writer left a core idle (799 docs/s on 2 cores, 2 writers 1,204). As soon as a
 * request's statement runs, no further extra batch starts, and those in flight hold back as always.
 */
function batchesInFlight(ctx: Pick<Deps, 'config' | 'dbKind' | 'dbGate'>, queue: IngestionState): number {
  const writers = writersOf(ctx);
  const bulk = ctx.config.KAS_BULK_INGEST_WRITERS || DEFAULT_BULK_WRITERS;
  return bulk > writers && bulkLoad(ctx, queue) ? bulk : writers;
}

/**
 * Requests' statements have been absent this long for a bulk load (a search runs a few within
 * milliseconds; a chat's, between the model's tokens, within a second or two).
 */
const BULK_QUIET_MS = 2000;

/**
 * Whether the queue holds a bulk load: a full group waiting beside those being written, on Postgres,
 * while this process has run no request's statement for `BULK_QUIET_MS`.
 */
function bulkLoad(ctx: Pick<Deps, 'dbKind' | 'dbGate'>, queue: IngestionState): boolean {
  return (
    !!ctx.dbGate && queue.pending.length >= batchDocuments(ctx) && ctx.dbGate.requestsIdleMs >= BULK_QUIET_MS
  );
}

/** Ingestion's writers outside a bulk load (`KAS_INGEST_WRITERS`). */
function writersOf(ctx: Pick<Deps, 'config'>): number {
  return ctx.config.KAS_INGEST_WRITERS || DEFAULT_WRITERS;
}

/** Read once: `availableParallelism()` asks the system each time, and this is asked for every document. */
const DEFAULT_WRITERS = Math.max(1, Math.floor(availableParallelism() / 2));
const DEFAULT_BULK_WRITERS = Math.max(2, availableParallelism());

/** The system ingestion pair's id, cached in the state (a failed or empty lookup is tried again). */
function systemPairIdOf(ctx: Deps): Promise<number | undefined> {
  let id = ctx.ingestion.systemPairId;
  if (!id) {
    id = documentsRepository.systemIngestionPairId(ctx.db);
    const forget = () => {
      if (ctx.ingestion.systemPairId === id) ctx.ingestion.systemPairId = undefined;
    };
    id.then((v) => v === undefined && forget(), forget);
    ctx.ingestion.systemPairId = id;
  }
  return id;
}

/** Takes the next batch: at most one request per document id (a repeated id waits for the next batch). */
function takeBatch(ctx: Pick<Deps, 'dbKind'>, queue: IngestionState): Pending[] {
  const batch: Pending[] = [];
  const rest: Pending[] = [];
  const ids = new Set<string>();
  let chunks = 0;
  const most = batchDocuments(ctx);
  // Every queued request was pushed by `ingestDocument` below, as a `Pending`.
  for (const item of queue.pending as Pending[]) {
    // A document written in stages goes alone (a batch is one transaction): as the batch's only one.
    const full =
      batch.length >= most ||
      (batch.length > 0 && chunks + item.p.chunks.length > BATCH_CHUNKS) ||
      (batch.length > 0 && (isStaged(ctx, batch[0]!.p.chunks.length) || isStaged(ctx, item.p.chunks.length)));
    if (full || ids.has(item.documentId) || queue.busy.has(item.documentId)) {
      rest.push(item);
      continue;
    }
    ids.add(item.documentId);
    chunks += item.p.chunks.length;
    batch.push(item);
  }
  queue.pending = rest;
  return batch;
}

function startBatches(ctx: Deps, queue: IngestionState) {
  queue.scheduled = false;
  const writers = writersOf(ctx);
  while (queue.pending.length && queue.inFlight < batchesInFlight(ctx, queue)) {
    // A bulk load's extra writer: its statements get a background turn of their own.
    const gate = queue.inFlight >= writers ? ctx.dbGate : undefined;
    // In a bulk load no request's statement runs beside the group's, so its chunks go in one statement:
    // in several, the statistics are counted by a statement reading their terms back (`countChunkTerms`,
    // ~18 ms of the database's CPU per group of 256) instead of from the statement's own rows.
    const perStatement = bulkLoad(ctx, queue) ? Number.POSITIVE_INFINITY : chunksPerStatement(ctx);
    const batch = takeBatch(ctx, queue);
    if (!batch.length) break;
    for (const item of batch) queue.busy.add(item.documentId);
    queue.inFlight++;
    if (gate) gate.extraTurns++;
    // Bulk work: on the embedded database, reads waiting for its one connection go first.
    void inBackground(() => runBatch(ctx, batch, perStatement))
      .catch((error) => {
        for (const item of batch) item.reject(error);
      })
      .finally(() => {
        for (const item of batch) queue.busy.delete(item.documentId);
        queue.inFlight--;
        if (gate) gate.extraTurns--;
        schedule(ctx, queue);
      });
  }
}

function schedule(ctx: Deps, queue: IngestionState) {
  if (queue.scheduled || !queue.pending.length || queue.inFlight >= batchesInFlight(ctx, queue)) return;
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
  actor,
  fromConnector,
  externalAccess,
}: {
  ctx: Deps;
  input: IngestDocumentInput;
  /** The caller of the ingestion API: curators write only into pairs they manage. */
  actor?: Actor;
  /** Synced by a connector (the same path, but not an ingestion-API document). */
  fromConnector?: boolean;
  /** From a connector whose pair is `sync`: who may see the document according to the source. */
  externalAccess?: ExternalAccessInput | null;
}): Promise<IngestionResult> {
  const queue = ctx.ingestion;
  // Requests naming one id join the queue in the order they arrived, however long each takes to prepare.
  const key = input.document.id ?? undefined;
  const earlier = key === undefined ? undefined : queue.preparing.get(key);
  let joined!: () => void;
  const inQueue = new Promise<void>((resolve) => {
    joined = resolve;
  });
  if (key !== undefined) queue.preparing.set(key, inQueue);
  try {
    const p = await prepare(ctx, input, { fromConnector, externalAccess });
    if (actor)
      await assertMayIngest(ctx.db, actor, {
        documentId: p.row.id,
        targetPairId: input.cc_pair_id,
      });
    await vectorise(ctx, p.chunks);
    await earlier;
    return await new Promise<IngestionResult>((resolve, reject) => {
      const item: Pending = { documentId: p.row.id, p, resolve, reject };
      queue.pending.push(item);
      joined();
      schedule(ctx, queue);
    });
  } finally {
    joined();
    if (key !== undefined && queue.preparing.get(key) === inQueue) queue.preparing.delete(key);
  }
}

/**
 * Requests queued from which a bulk load starts the text thread (db/text-thread.ts): a batch's
 * documents, or a few clients' at once. A document or two at a time never does.
 */
const TEXT_THREAD_QUEUE = 32;

/** Chunks vectorised by one statement of the text thread at most. */
const TEXT_THREAD_CHUNKS = 1000;

/**
 * Sets the chunks' tsvectors (`Chunk.vector`) from the text thread when it runs, so that the embedded
 * database's own thread, the bottleneck of a bulk load, only reads them; starts it for a bulk load.
 * Otherwise, or if the thread fails, they stay unset and the insert statement computes them. The
 * chunks of the requests that arrive while a statement runs go together in the next one.
 */
function vectorise(ctx: Deps, chunks: VectorisedChunk[]): Promise<void> {
  const thread = ctx.textThread;
  const state = ctx.ingestion.vectors;
  if (!thread || !chunks.length) return Promise.resolve();
  const db = thread.ready(ctx.ingestion.pending.length + state.waiting.length >= TEXT_THREAD_QUEUE);
  if (!db) return Promise.resolve();
  return new Promise<void>((done) => {
    state.waiting.push({ chunks, done });
    if (!state.running) void drainVectors(ctx);
  });
}

async function drainVectors(ctx: Deps): Promise<void> {
  const state = ctx.ingestion.vectors;
  state.running = true;
  try {
    while (state.waiting.length) {
      // The thread of now: it may have stopped (unused for a while) and started again meanwhile.
      const db = ctx.textThread?.ready(false);
      if (!db) {
        for (const g of state.waiting.splice(0)) g.done();
        return;
      }
      let count = 0;
      let take = 0;
      while (
        take < state.waiting.length &&
        (take === 0 || count + state.waiting[take]!.chunks.length <= TEXT_THREAD_CHUNKS)
      )
        count += state.waiting[take++]!.chunks.length;
      const group = state.waiting.splice(0, take);
      const chunks = group.flatMap((g) => g.chunks);
      try {
        const vectors = await documentsRepository.textVectors(db, chunks);
        chunks.forEach((chunk, i) => {
          chunk.vector = vectors[i];
        });
        state.vectorised += chunks.length;
      } catch (error) {
        // Every waiting chunk goes as it is: its statement computes its vector.
        ctx.textThread?.failed(error);
        for (const g of [...group, ...state.waiting.splice(0)]) g.done();
        return;
      }
      for (const g of group) g.done();
    }
  } finally {
    state.running = false;
  }
}

/**
 * Several documents at once, each settled on its own (a refusal or failure is that document's alone).
 * They join the group-commit queue together, so they are written by a few multi-row statements in one
 * or two transactions: the write path of the batch route and of connectors' runs.
 */
export function ingestMany({
  ctx,
  documents,
  ccPairId,
  actor,
  fromConnector,
}: {
  ctx: Deps;
  documents: { document: IngestedDocument; externalAccess?: ExternalAccessInput | null }[];
  ccPairId?: number | null;
  actor?: Actor;
  fromConnector?: boolean;
}): Promise<PromiseSettledResult<IngestionResult>[]> {
  return Promise.allSettled(
    documents.map(({ document, externalAccess }) =>
      ingestDocument({
        ctx,
        input: { document, cc_pair_id: ccPairId ?? null },
        ...(actor ? { actor } : {}),
        ...(fromConnector ? { fromConnector } : {}),
        ...(externalAccess !== undefined ? { externalAccess } : {}),
      }),
    ),
  );
}

/**
 * The batch route: at most `KAS_INGESTION_BATCH_MAX` documents, each answered individually (its id and
 * `already_existed`, or the error that refused it alone), idempotent by id like the single route.
 */
export async function ingestBatch({
  ctx,
  input,
  actor,
}: {
  ctx: Deps;
  input: IngestBatchInput;
  actor?: Actor;
}): Promise<IngestBatchOutput> {
  const most = ctx.config.KAS_INGESTION_BATCH_MAX;
  if (input.documents.length > most)
    throw new AppError(
      'PAYLOAD_TOO_LARGE',
      `A batch holds at most ${most} documents (KAS_INGESTION_BATCH_MAX); this one has ${input.documents.length}`,
    );
  const settled = await ingestMany({
    ctx,
    documents: input.documents.map((document) => ({ document })),
    ccPairId: input.cc_pair_id ?? null,
    ...(actor ? { actor } : {}),
  });
  return {
    results: settled.map((outcome, i): BatchIngestionResult => {
      if (outcome.status === 'fulfilled') return { ...outcome.value, error: null };
      const response = toErrorResponse(outcome.reason);
      if (response.error_code === 'INTERNAL_ERROR')
        ctx.logger.error({ err: outcome.reason }, 'a document of an ingestion batch failed');
      return {
        document_id: input.documents[i]?.id ?? null,
        already_existed: null,
        error: { error_code: response.error_code, detail: response.detail },
      };
    }),
  };
}

/**
 * Documents of fewer characters than this are prepared on the event loop, one per turn of it: chunking
 * runs at ~10 MB/s, so they cost it at most ~3 ms, less than handing them to a worker thread and back
 * (cloning, the queue, a wake-up) costs the request; larger ones are chunked and hashed in the CPU pool.
 */
const INLINE_CHARS = 32_000;

/** The document's id, hashes and chunks: in the CPU pool for a large one (the event loop only awaits). */
function prepare(
  ctx: Deps,
  input: IngestDocumentInput,
  options: { fromConnector?: boolean | undefined; externalAccess?: ExternalAccessInput | null | undefined },
): Promise<PreparedDocument> {
  const { document } = input;
  let chars = document.semantic_identifier.length + (document.title?.length ?? 0);
  for (const section of document.sections) chars += section.text.length;
  const all = { ...options, maxChunks: ctx.config.KAS_MAX_DOCUMENT_CHUNKS };
  // A macrotask rather than a microtask: a batch's hundred small documents would otherwise be chunked
  // back to back (~250 ms) before the event loop could answer anyone else.
  if (chars < INLINE_CHARS)
    return new Promise((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(prepareDocument(input, all));
        } catch (error) {
          reject(error);
        }
      }),
    );
  return ctx.cpu.run(
    'prepareDocument',
    { input, options: all },
    { subject: document.id ? `document ${JSON.stringify(document.id.slice(0, 200))}` : 'the document' },
  );
}
