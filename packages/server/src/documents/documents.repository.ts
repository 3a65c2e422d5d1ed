import { type RawBuilder, sql } from 'kysely';
import type { AccessType, CcPairStatus } from '../connectors/connectors.table.ts';
import { arrayOf, type DbExecutor } from '../db/database.ts';
import type { Chunk } from './chunking.ts';
import type { Document } from './documents.table.ts';

export interface CcPairAccess {
  id: number;
  status: CcPairStatus;
  access_type: AccessType;
  is_system: boolean;
  user_ids: string[];
  group_ids: number[];
  document_sets: string[];
}

/** The id of the system ingestion CC pair (the default target of the ingestion API). */
export async function systemIngestionPairId(db: DbExecutor): Promise<number | undefined> {
  const row = await db
    .selectFrom('cc_pairs as p')
    .innerJoin('connectors as c', 'c.id', 'p.connector_id')
    .select('p.id')
    .where('p.is_system', '=', true)
    .where('c.source', '=', 'ingestion_api')
    .orderBy('p.id')
    .executeTakeFirst();
  return row?.id;
}

/**
 * A CC pair with who may see its documents (users: its creator and its credential's owner; groups
 * linked to it) and the document sets it belongs to. `null` is the system ingestion pair.
 */
export async function findCcPairAccess(db: DbExecutor, pairId: number): Promise<CcPairAccess | undefined> {
  const row = await db
    .selectFrom('cc_pairs as p')
    .select((eb) => [
      'p.id',
      'p.status',
      'p.access_type',
      'p.is_system',
      'p.creator_id',
      eb
        .selectFrom('credentials as k')
        .select('k.user_id')
        .whereRef('k.id', '=', 'p.credential_id')
        .as('credential_user_id'),
      arrayOf(
        eb.selectFrom('cc_pair_groups as g').select('g.group_id').whereRef('g.cc_pair_id', '=', 'p.id'),
      ).as('group_ids'),
      arrayOf(
        eb
          .selectFrom('document_set_cc_pairs as l')
          .innerJoin('document_sets as s', 's.id', 'l.document_set_id')
          .select('s.name')
          .whereRef('l.cc_pair_id', '=', 'p.id'),
      ).as('document_sets'),
    ])
    .where('p.id', '=', pairId)
    .executeTakeFirst();
  if (!row) return undefined;
  const { creator_id, credential_user_id, ...access } = row;
  return {
    ...access,
    user_ids: [...new Set([creator_id, credential_user_id].filter((u): u is string => !!u))],
  };
}

/** A connector, its credential and their CC pair (the connectors domain builds its endpoints on this). */
export async function insertCcPair(
  db: DbExecutor,
  row: {
    name: string;
    source: string;
    input_type: 'poll' | 'event' | 'load_state' | 'slim_retrieval';
    connector_specific_config: Record<string, unknown>;
    access_type: AccessType;
    status: CcPairStatus;
    creator_id: string | null;
  },
): Promise<{ cc_pair_id: number; connector_id: number; credential_id: number }> {
  const connector = await db
    .insertInto('connectors')
    .values({
      name: row.name,
      source: row.source,
      input_type: row.input_type,
      connector_specific_config: JSON.stringify(row.connector_specific_config),
      refresh_freq: null,
      prune_freq: null,
      indexing_start: null,
      access_type: row.access_type,
      creator_id: row.creator_id,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const credential = await db
    .insertInto('credentials')
    .values({ name: row.name, source: row.source, user_id: row.creator_id })
    .returning('id')
    .executeTakeFirstOrThrow();
  const pair = await db
    .insertInto('cc_pairs')
    .values({
      name: row.name,
      connector_id: connector.id,
      credential_id: credential.id,
      status: row.status,
      access_type: row.access_type,
      creator_id: row.creator_id,
      last_successful_index_time: null,
      last_pruned: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { cc_pair_id: pair.id, connector_id: connector.id, credential_id: credential.id };
}

export async function setCcPairGroups(db: DbExecutor, ccPairId: number, groupIds: number[]) {
  await db.deleteFrom('cc_pair_groups').where('cc_pair_id', '=', ccPairId).execute();
  if (groupIds.length) {
    await db
      .insertInto('cc_pair_groups')
      .values(groupIds.map((group_id) => ({ cc_pair_id: ccPairId, group_id })))
      .execute();
  }
}

/** The subset of `ids` that name existing CC pairs. */
export async function findExistingCcPairIds(db: DbExecutor, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('cc_pairs').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}

/** The stored state that decides what an ingestion call does; locks the row for the transaction. */
/** One document's state, its row locked for the transaction (the one-id case of `findDocumentStates`). */
export async function findDocumentState(db: DbExecutor, id: string): Promise<DocumentState | undefined> {
  return (await findDocumentStates(db, [id])).get(id);
}

/** A document as ingestion writes it (hidden, boost and times are the database's). */
export type DocumentRow = Omit<Document, 'hidden' | 'pending' | 'boost' | 'time_created' | 'time_updated'>;

/** Inserts or replaces a document; `inserted` is false when a row with that id already existed. */
export async function upsertDocument(db: DbExecutor, row: DocumentRow): Promise<{ inserted: boolean }> {
  const values = {
    ...row,
    metadata: JSON.stringify(row.metadata),
    primary_owners: JSON.stringify(row.primary_owners),
    secondary_owners: JSON.stringify(row.secondary_owners),
  };
  const { id: _id, ...update } = values;
  const result = await db
    .insertInto('documents')
    .values(values)
    // A pending row (a staged write a crash interrupted) is replaced whole, so it is published too.
    .onConflict((oc) => oc.column('id').doUpdateSet({ ...update, pending: false, time_updated: new Date() }))
    // Raw SQL: `xmax` is a system column, which no table type declares; 0 when the row was inserted.
    .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
    .executeTakeFirstOrThrow();
  return { inserted: result.inserted };
}

const CHUNK_COLUMNS = [
  'document_id',
  'chunk_id',
  'title',
  'content',
  'blurb',
  'link',
  'section_links',
  'token_count',
  'search_vector',
  'bm25_terms',
  'bm25_weights',
  'bm25_length',
  'bm25_title_length',
  'bm25_boost',
] as const;

/**
 * The rows of these chunks as one `SELECT` over arrays: eight bind parameters whatever the number of
 * chunks (a multi-row `VALUES` takes eight per chunk, and both databases refuse more than 65,535: a
 * document of more than 8,191 chunks could not be written), one more when vectors were computed before
 * (`Chunk.vector`: the text thread). Each chunk's tsvector otherwise, its BM25 weights and its boost are
 * computed here, set-based, exactly as the row trigger computes them for a row inserted without them
 * (migrations 0030, 0032): the average lengths are read once per statement rather than once per chunk.
 * The vector is computed once (`OFFSET 0` keeps its subquery from being inlined into each of its two
 * uses). The boost's factor is the document's; `created`: the documents are being created (by this
 * statement or this transaction) with the default boost, whose factor is 1 — the lookup would find
 * nothing (a new document inserted by the same statement is not visible to it) or boost 0, and cost an
 * index lookup per chunk.
 */
function chunkRows(documents: { id: string; chunks: Chunk[] }[], created = false) {
  const column = <T>(pick: (c: Chunk) => T) => documents.flatMap((d) => d.chunks.map(pick));
  const documentIds = documents.flatMap((d) => d.chunks.map(() => d.id));
  // Vectors computed before (the text thread): read where given, computed where not.
  const given = documents.some((d) => d.chunks.some((c) => c.vector !== undefined));
  const computed = chunkVector(sql`u.t`, sql`u.x`);
  // Raw SQL: `unnest` of several arrays (one row per chunk) and the full-text functions, which the
  // builder cannot express.
  return sql`SELECT u.d, u.c, u.t, u.x, u.b, u.l, u.s::jsonb, u.n, v.vector, w.terms, w.weights,
      coalesce(w.len, 0), coalesce(w.tlen, 0),
      ${created ? sql`1::real` : sql`coalesce((SELECT kas_boost_factor(doc.boost) FROM documents doc WHERE doc.id = u.d), 1)`}
    FROM unnest(
      ${documentIds}::text[], ${column((c) => c.chunk_id)}::int[], ${column((c) => c.title)}::text[],
      ${column((c) => c.content)}::text[], ${column((c) => c.blurb)}::text[], ${column((c) => c.link)}::text[],
      ${column((c) => JSON.stringify(c.section_links))}::text[], ${column((c) => c.token_count)}::int[]
      ${given ? sql`, ${column((c) => c.vector ?? null)}::text[]` : sql``}
    ) AS u(d, c, t, x, b, l, s, n ${given ? sql`, pv` : sql``}),
    LATERAL (
      SELECT ${given ? sql`coalesce(u.pv::tsvector, ${computed})` : computed} AS vector
      OFFSET 0
    ) v,
    LATERAL kas_bm25_weights(v.vector) w`;
}

/** A chunk's tsvector: its title's words weighted A, its content's D. */
function chunkVector(title: RawBuilder<unknown>, content: RawBuilder<unknown>) {
  return sql`setweight(to_tsvector('english', ${title}), 'A') || setweight(to_tsvector('english', ${content}), 'D')`;
}

/**
 * The chunks' tsvectors as text, as `chunkRows` computes them, in their order: run on the text thread
 * (db/text-thread.ts), whose database holds no data, so that the database's own thread only reads them.
 */
export async function textVectors(
  db: DbExecutor,
  chunks: { title: string; content: string }[],
): Promise<string[]> {
  const result = await sql<{ v: string }>`
    SELECT (${chunkVector(sql`u.t`, sql`u.x`)})::text AS v
    FROM unnest(${chunks.map((c) => c.title)}::text[], ${chunks.map((c) => c.content)}::text[]) WITH ORDINALITY AS u(t, x, i)
    ORDER BY u.i`.execute(db);
  return result.rows.map((r) => r.v);
}

/**
 * A new document, its chunks and its owner in one statement (so atomically, without a transaction
 * round trip). Fails with a unique violation if the id exists meanwhile.
 */
export async function insertNewDocument(db: DbExecutor, row: DocumentRow, chunks: Chunk[], ccPairId: number) {
  const values = {
    ...row,
    metadata: JSON.stringify(row.metadata),
    primary_owners: JSON.stringify(row.primary_owners),
    secondary_owners: JSON.stringify(row.secondary_owners),
  };
  await db
    .with('doc', (qb) => qb.insertInto('documents').values(values).returning('id'))
    .with('owner', (qb) =>
      qb
        .insertInto('document_by_cc_pair')
        .values({ document_id: row.id, cc_pair_id: ccPairId })
        .returning('cc_pair_id'),
    )
    .insertInto('chunks')
    .columns(CHUNK_COLUMNS)
    .expression(chunkRows([{ id: row.id, chunks }], true))
    .execute();
}

/** The stored state of these documents (those that exist), locking their rows for the transaction. */
export interface DocumentState {
  content_hash: string;
  from_ingestion_api: boolean;
  cc_pair_ids: number[];
  /** A staged write that never finished (see `insertPendingDocument`): to be replaced whole. */
  pending: boolean;
}

/** What ingestion needs to know of existing documents, their rows locked for the transaction. */
export async function findDocumentStates(db: DbExecutor, ids: string[]): Promise<Map<string, DocumentState>> {
  if (!ids.length) return new Map();
  const rows = await db
    .selectFrom('documents as d')
    .select((eb) => [
      'd.id',
      'd.content_hash',
      'd.from_ingestion_api',
      'd.pending',
      arrayOf(
        eb
          .selectFrom('document_by_cc_pair as o')
          .select('o.cc_pair_id')
          .whereRef('o.document_id', '=', 'd.id'),
      ).as('cc_pair_ids'),
    ])
    .where((eb) => eb('d.id', '=', eb.fn.any(eb.val(ids))))
    .forUpdate()
    .execute();
  return new Map(rows.map(({ id, ...state }) => [id, state]));
}

export interface NewDocument {
  row: DocumentRow;
  chunks: Chunk[];
  ccPairId: number;
}

/**
 * The columns of a new document's row, with their types as `jsonb_to_recordset` reads them. A group's
 * rows go to the database as one JSON parameter: a multi-row `VALUES` took 20 bind parameters per
 * document (5,120 for a group of 256), which the database parsed and planned each time (bare inserts of
 * 100 documents per statement: 0.742 ms of its CPU per document with `VALUES`, 0.715 with arrays).
 */
const DOCUMENT_TYPES: Record<keyof DocumentRow, string> = {
  id: 'text',
  semantic_id: 'text',
  title: 'text',
  link: 'text',
  source: 'text',
  from_ingestion_api: 'boolean',
  metadata: 'jsonb',
  tags: 'text[]',
  primary_owners: 'jsonb',
  secondary_owners: 'jsonb',
  doc_updated_at: 'timestamptz',
  content_hash: 'text',
  chunk_count: 'integer',
  is_public: 'boolean',
  access_user_ids: 'uuid[]',
  access_group_ids: 'integer[]',
  access_external: 'text[]',
  external_public: 'boolean',
};
const DOCUMENT_COLUMNS = Object.keys(DOCUMENT_TYPES) as (keyof DocumentRow)[];
const DOCUMENT_RECORD = sql.raw(DOCUMENT_COLUMNS.map((c) => `${c} ${DOCUMENT_TYPES[c]}`).join(', '));

/**
 * New documents, their chunks and their owners: one statement, or with `perStatement` the chunks
 * beyond it in more statements. Fails with a unique violation if one of the ids exists meanwhile.
 * Several statements in a transaction count the chunks' terms for the search statistics once, after
 * the last one (`kas.count_terms_later`, migration 0031), rather than each statement its own.
 */
export async function insertNewDocuments(
  db: DbExecutor,
  documents: NewDocument[],
  perStatement = Number.POSITIVE_INFINITY,
) {
  if (!documents.length) return;
  const [first = [], ...rest] = slices(documents, perStatement);
  const countOnce = rest.length > 0 && db.isTransaction;
  if (countOnce) await sql`SELECT set_config('kas.count_terms_later', 'on', true)`.execute(db);
  // Raw SQL: the rows as one JSON parameter (`jsonb_to_recordset`) and a data-modifying CTE over it,
  // which the builder cannot express.
  await sql`WITH doc AS (
      INSERT INTO documents (${sql.join(DOCUMENT_COLUMNS.map((c) => sql.ref(c)))})
      SELECT ${sql.join(DOCUMENT_COLUMNS.map((c) => sql.ref(`r.${c}`)))}
      FROM jsonb_to_recordset(${JSON.stringify(documents.map((d) => d.row))}::jsonb) AS r(${DOCUMENT_RECORD})
      RETURNING id),
    owner AS (
      INSERT INTO document_by_cc_pair (document_id, cc_pair_id)
      SELECT * FROM unnest(${documents.map((d) => d.row.id)}::text[], ${documents.map((d) => d.ccPairId)}::int[])
      RETURNING cc_pair_id)
    INSERT INTO chunks (${sql.join(CHUNK_COLUMNS.map((c) => sql.ref(c)))}) ${chunkRows(first, true)}`.execute(
    db,
  );
  for (const slice of rest)
    await db.insertInto('chunks').columns(CHUNK_COLUMNS).expression(chunkRows(slice, true)).execute();
  if (countOnce) {
    await sql`SELECT set_config('kas.count_terms_later', 'off', true)`.execute(db);
    await countChunkTerms(
      db,
      documents.map((d) => d.row.id),
    );
  }
}

/**
 * Appends the search statistics' deltas of these documents' chunks (what the insert trigger appends
 * for the chunks of one statement, migrations 0011 and 0037): one row per distinct term, then the chunk
 * count and total lengths under their reserved keys; and the documents, for their champion lists.
 */
async function countChunkTerms(db: DbExecutor, documentIds: string[]) {
  // Raw SQL: `unnest` of each chunk's term array, grouped, which the builder cannot express.
  await sql`
    WITH c AS MATERIALIZED (
      SELECT bm25_terms, bm25_length, bm25_title_length FROM chunks WHERE document_id = ANY(${documentIds}::text[])
    ), written AS (
      INSERT INTO search_written_documents (document_ids) VALUES (${documentIds}::text[])
    )
    INSERT INTO search_term_deltas (term, delta)
    SELECT t, count(*) FROM c, unnest(c.bm25_terms) AS t GROUP BY t
    UNION ALL SELECT ${'\u0001n'}::text, count(*) FROM c HAVING count(*) > 0
    UNION ALL SELECT ${'\u0001len'}::text, sum(bm25_length) FROM c HAVING count(*) > 0
    UNION ALL SELECT ${'\u0001tlen'}::text, sum(bm25_title_length) FROM c HAVING count(*) > 0`.execute(db);
}

/** The documents' chunks in slices of at most `perStatement` (the first one written with the rows). */
function slices(documents: NewDocument[], perStatement: number): { id: string; chunks: Chunk[] }[][] {
  const all: { id: string; chunks: Chunk[] }[][] = [];
  let current: { id: string; chunks: Chunk[] }[] = [];
  let size = 0;
  for (const { row, chunks } of documents) {
    for (let i = 0; i < chunks.length; ) {
      const take = Math.min(chunks.length - i, perStatement - size);
      current.push({ id: row.id, chunks: chunks.slice(i, i + take) });
      size += take;
      i += take;
      if (size >= perStatement) {
        all.push(current);
        current = [];
        size = 0;
      }
    }
  }
  if (current.length) all.push(current);
  return all;
}

/**
 * Replaces a document's chunks; with `perStatement`, in statements of at most that many chunks (the
 * embedded database runs each statement on the event loop's thread: small ones let requests in between).
 */
export async function replaceChunks(
  db: DbExecutor,
  documentId: string,
  chunks: Chunk[],
  isNew: boolean,
  perStatement = Number.POSITIVE_INFINITY,
) {
  if (!isNew) await db.deleteFrom('chunks').where('document_id', '=', documentId).execute();
  for (let i = 0; i < chunks.length; i += perStatement) {
    await db
      .insertInto('chunks')
      .columns(CHUNK_COLUMNS)
      .expression(chunkRows([{ id: documentId, chunks: chunks.slice(i, i + perStatement) }]))
      .execute();
  }
}

/**
 * A new document written in stages: its row first, `pending` (every reader skips it), then its chunks
 * in statements of its own (`insertChunks`), then `publishDocument` in one short transaction. Fails
 * with a unique violation if the id exists.
 */
export async function insertPendingDocument(db: DbExecutor, row: DocumentRow): Promise<void> {
  await db
    .insertInto('documents')
    .values({
      ...row,
      metadata: JSON.stringify(row.metadata),
      primary_owners: JSON.stringify(row.primary_owners),
      secondary_owners: JSON.stringify(row.secondary_owners),
      pending: true,
    })
    .execute();
}

/** Adds chunks to a document (one statement whatever their number: eight bind parameters). */
export async function insertChunks(db: DbExecutor, documentId: string, chunks: Chunk[]): Promise<void> {
  await db
    .insertInto('chunks')
    .columns(CHUNK_COLUMNS)
    .expression(chunkRows([{ id: documentId, chunks }]))
    .execute();
}

/** Makes a pending document visible; false when it is no longer pending (deleted meanwhile). */
export async function publishDocument(db: DbExecutor, documentId: string): Promise<boolean> {
  const result = await db
    .updateTable('documents')
    .set({ pending: false })
    .where('id', '=', documentId)
    .where('pending', '=', true)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes pending documents (with their chunks): this one, or every one (at start-up, after a crash). */
export async function deletePendingDocuments(db: DbExecutor, documentId?: string): Promise<number> {
  const result = await db
    .deleteFrom('documents')
    .where('pending', '=', true)
    .$call((q) => (documentId === undefined ? q : q.where('id', '=', documentId)))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export function addOwner(db: DbExecutor, documentId: string, ccPairId: number) {
  return db
    .insertInto('document_by_cc_pair')
    .values({ document_id: documentId, cc_pair_id: ccPairId })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/**
 * Recomputes document access from the owning CC pairs: public if any owner is public (or a `sync`
 * owner's source made it public); otherwise the owners' creators and credential owners, and the
 * groups linked to them. A `sync` owner grants nothing of its own: the source's list
 * (`access_external`) decides, so a user sees such a document exactly when the source lets them.
 */
export function recomputeAccess(db: DbExecutor, documentIds: string[]) {
  // Raw SQL: the owners' users come from a lateral `VALUES` list, which the builder cannot express.
  return sql`
    UPDATE documents d SET
      is_public = EXISTS (
        SELECT 1 FROM document_by_cc_pair o JOIN cc_pairs p ON p.id = o.cc_pair_id
        WHERE o.document_id = d.id AND (p.access_type = 'public' OR (p.access_type = 'sync' AND d.external_public))),
      access_user_ids = ARRAY(
        SELECT DISTINCT v.u FROM document_by_cc_pair o
        JOIN cc_pairs p ON p.id = o.cc_pair_id
        JOIN credentials k ON k.id = p.credential_id
        CROSS JOIN LATERAL (VALUES (p.creator_id), (k.user_id)) AS v(u)
        WHERE o.document_id = d.id AND v.u IS NOT NULL AND p.access_type <> 'sync'),
      access_group_ids = ARRAY(
        SELECT DISTINCT g.group_id FROM document_by_cc_pair o
        JOIN cc_pair_groups g ON g.cc_pair_id = o.cc_pair_id
        JOIN cc_pairs p ON p.id = o.cc_pair_id
        WHERE o.document_id = d.id AND p.access_type <> 'sync'),
      access_external = CASE WHEN EXISTS (
        SELECT 1 FROM document_by_cc_pair o JOIN cc_pairs p ON p.id = o.cc_pair_id
        WHERE o.document_id = d.id AND p.access_type = 'sync') THEN d.access_external ELSE '{}' END
    WHERE d.id = ANY(${documentIds}::text[])`.execute(db);
}

export function documentIdsOfCcPairs(db: DbExecutor, ccPairIds: number[]) {
  if (!ccPairIds.length) return Promise.resolve([] as string[]);
  return db
    .selectFrom('document_by_cc_pair')
    .select('document_id')
    .distinct()
    .where('cc_pair_id', 'in', ccPairIds)
    .execute()
    .then((rows) => rows.map((r) => r.document_id));
}

const minimalInfo = ['d.id as document_id', 'd.semantic_id', 'd.link'] as const;

/** Every CC pair with its user groups: what the access rules of `auth/scope.ts` read. */
export async function listCcPairGroups(
  db: DbExecutor,
): Promise<{ id: number; access_type: AccessType; groups: number[] }[]> {
  return db
    .selectFrom('cc_pairs as p')
    .select((eb) => [
      'p.id',
      'p.access_type',
      arrayOf(
        eb
          .selectFrom('cc_pair_groups as g')
          .select('g.group_id')
          .whereRef('g.cc_pair_id', '=', 'p.id')
          .orderBy('g.group_id'),
      ).as('groups'),
    ])
    .orderBy('p.id')
    .execute();
}

/** The CC pairs owning a document, with their user groups. */
export async function ownerPairsOf(
  db: DbExecutor,
  documentId: string,
): Promise<{ id: number; groups: number[] }[]> {
  return db
    .selectFrom('document_by_cc_pair as o')
    .select((eb) => [
      'o.cc_pair_id as id',
      arrayOf(
        eb
          .selectFrom('cc_pair_groups as g')
          .select('g.group_id')
          .whereRef('g.cc_pair_id', '=', 'o.cc_pair_id')
          .orderBy('g.group_id'),
      ).as('groups'),
    ])
    .where('o.document_id', '=', documentId)
    .orderBy('o.cc_pair_id')
    .execute();
}

/** Documents of the ingestion API; with `withinPairs`, only those every owner of which is in that list. */
export function listIngestedDocuments(db: DbExecutor, withinPairs: readonly number[] | null) {
  return db
    .selectFrom('documents as d')
    .select(minimalInfo)
    .where('d.from_ingestion_api', '=', true)
    .where('d.pending', '=', false)
    .$call((q) =>
      withinPairs === null
        ? q
        : q.where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('document_by_cc_pair as o')
                  .select(eb.lit(1).as('one'))
                  .whereRef('o.document_id', '=', 'd.id')
                  .where((eb) => eb.not(eb('o.cc_pair_id', '=', eb.fn.any(eb.val(withinPairs))))),
              ),
            ),
          ),
    )
    .orderBy('d.time_created')
    .orderBy('d.id')
    .execute();
}

export function listCcPairDocuments(db: DbExecutor, ccPairId: number) {
  return db
    .selectFrom('documents as d')
    .innerJoin('document_by_cc_pair as o', 'o.document_id', 'd.id')
    .select(minimalInfo)
    .where('o.cc_pair_id', '=', ccPairId)
    .orderBy('d.time_created')
    .orderBy('d.id')
    .execute();
}

export function forgetContentHash(db: DbExecutor, ids: string[]) {
  return db.updateTable('documents').set({ content_hash: '' }).where('id', 'in', ids).execute();
}

export function findDocumentOrigin(db: DbExecutor, id: string) {
  return db
    .selectFrom('documents')
    .select(['id', 'from_ingestion_api'])
    .where('id', '=', id)
    .where('pending', '=', false)
    .executeTakeFirst();
}

export function deleteDocument(db: DbExecutor, id: string) {
  return db.deleteFrom('documents').where('id', '=', id).where('pending', '=', false).executeTakeFirst();
}

/** Documents in id order after `afterId`, for rebuilding the index in batches. */
export function listDocumentIdsAfter(db: DbExecutor, afterId: string | null, limit: number) {
  return db
    .selectFrom('documents')
    .select('id')
    .where('pending', '=', false)
    .$call((q) => (afterId === null ? q : q.where('id', '>', afterId)))
    .orderBy('id')
    .limit(limit)
    .execute()
    .then((rows) => rows.map((r) => r.id));
}

/** Everything an index stores about these documents, with their chunks and document set names. */
export async function loadIndexedDocuments(db: DbExecutor, ids: string[]) {
  if (!ids.length) return { documents: [], chunks: [] };
  const documents = await db
    .selectFrom('documents as d')
    .select((eb) => [
      'd.id',
      'd.semantic_id',
      'd.source',
      'd.doc_updated_at',
      'd.tags',
      'd.hidden',
      'd.is_public',
      'd.access_user_ids',
      'd.access_group_ids',
      'd.access_external',
      arrayOf(
        eb
          .selectFrom('document_by_cc_pair as o')
          .innerJoin('document_set_cc_pairs as l', 'l.cc_pair_id', 'o.cc_pair_id')
          .innerJoin('document_sets as s', 's.id', 'l.document_set_id')
          .select('s.name')
          .distinct()
          .whereRef('o.document_id', '=', 'd.id'),
      ).as('document_sets'),
    ])
    .where('d.id', 'in', ids)
    .execute();
  const chunks = await db
    .selectFrom('chunks')
    .select(['document_id', 'chunk_id', 'title', 'content', 'blurb', 'link'])
    .where('document_id', 'in', ids)
    .orderBy('document_id')
    .orderBy('chunk_id')
    .execute();
  return { documents, chunks };
}
