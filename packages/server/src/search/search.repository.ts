import { type RawBuilder, sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import type { AccessScope, IndexFilters, SearchHit } from './search-index.ts';

/** Weights of D (content), C, B, A (title): a title match counts ten times a content match. */
const RANK_WEIGHTS = '{0.1, 0.2, 0.4, 1.0}';

/** Access and filters on `documents d`, as one SQL condition. */
export function documentConditions(filters: IndexFilters, access: AccessScope): RawBuilder<boolean> {
  const conditions: RawBuilder<unknown>[] = [];
  if (!access.all) {
    conditions.push(
      sql`(d.is_public OR d.access_user_ids @> ARRAY[${access.user_id}]::uuid[] OR d.access_group_ids && ${access.group_ids}::int[] OR d.access_external && ${access.external}::text[])`,
    );
  }
  if (!filters.include_hidden) conditions.push(sql`NOT d.hidden`);
  if (filters.source_types) conditions.push(sql`d.source = ANY(${filters.source_types}::text[])`);
  if (filters.time_cutoff) conditions.push(sql`d.doc_updated_at >= ${filters.time_cutoff}`);
  if (filters.tags) conditions.push(sql`d.tags && ${filters.tags}::text[]`);
  if (filters.document_ids) conditions.push(sql`d.id = ANY(${filters.document_ids}::text[])`);
  if (filters.document_sets) {
    conditions.push(sql`EXISTS (
      SELECT 1 FROM document_by_cc_pair o
      JOIN document_set_cc_pairs l ON l.cc_pair_id = o.cc_pair_id
      JOIN document_sets s ON s.id = l.document_set_id
      WHERE o.document_id = d.id AND s.name = ANY(${filters.document_sets}::text[]))`);
  }
  if (!conditions.length) return sql<boolean>`true`;
  return sql<boolean>`${sql.join(conditions, sql` AND `)}`;
}

/**
 * Full-text search that stays fast for very common terms: ranking cost grows with the number of
 * matches, so only a capped candidate set is ranked — up to `cap` chunks whose title matches, plus up
 * to `cap` chunks matching anywhere. Below the cap the ranking is exact.
 */
export async function fullTextSearch(
  db: DbExecutor,
  args: {
    tsquery: string;
    titleTsquery: string | null;
    filters: IndexFilters;
    access: AccessScope;
    limit: number;
    cap: number;
  },
): Promise<SearchHit[]> {
  const where = documentConditions(args.filters, args.access);
  const arm = (query: string) => sql`(
    SELECT c.document_id, c.chunk_id, c.search_vector FROM chunks c JOIN documents d ON d.id = c.document_id
    WHERE c.search_vector @@ to_tsquery('english', ${query}) AND ${where}
    LIMIT ${args.cap})`;
  const candidates = args.titleTsquery
    ? sql`${arm(args.titleTsquery)} UNION ALL ${arm(args.tsquery)}`
    : arm(args.tsquery);
  const result = await sql<SearchHit>`
    SELECT DISTINCT ON (score, document_id, chunk_id) document_id, chunk_id, score FROM (
      SELECT c.document_id, c.chunk_id,
        ts_rank(${RANK_WEIGHTS}::float4[], c.search_vector, to_tsquery('english', ${args.tsquery}), 1)::float8 AS score
      FROM (${candidates}) c
    ) ranked
    ORDER BY score DESC, document_id, chunk_id
    LIMIT ${args.limit}`.execute(db);
  return result.rows;
}

/** An empty query lists the most recently updated documents (their first chunk). */
export async function recentChunks(
  db: DbExecutor,
  args: { filters: IndexFilters; access: AccessScope; limit: number },
): Promise<SearchHit[]> {
  const result = await sql<SearchHit>`
    SELECT c.document_id, c.chunk_id, 0::float8 AS score
    FROM documents d JOIN chunks c ON c.document_id = d.id AND c.chunk_id = 0
    WHERE ${documentConditions(args.filters, args.access)}
    ORDER BY d.doc_updated_at DESC, d.id
    LIMIT ${args.limit}`.execute(db);
  return result.rows;
}

export async function insertVocabulary(db: DbExecutor, terms: string[]): Promise<void> {
  if (!terms.length) return;
  await sql`INSERT INTO search_vocabulary (term) SELECT unnest(${terms}::text[]) ON CONFLICT DO NOTHING`.execute(
    db,
  );
}

export function clearVocabulary(db: DbExecutor) {
  return sql`DELETE FROM search_vocabulary`.execute(db);
}

/** For each word that is not in the vocabulary, the most similar word that is (pg_trgm), if any. */
export async function correctWords(db: DbExecutor, words: string[]): Promise<Map<string, string>> {
  if (!words.length) return new Map();
  const result = await sql<{ word: string; term: string | null }>`
    SELECT w.word, (
      SELECT v.term FROM search_vocabulary v
      WHERE v.term % w.word
      ORDER BY similarity(v.term, w.word) DESC, v.term
      LIMIT 1
    ) AS term
    FROM unnest(${words}::text[]) AS w(word)
    WHERE NOT EXISTS (SELECT 1 FROM search_vocabulary v WHERE v.term = w.word)`.execute(db);
  return new Map(result.rows.filter((r) => r.term).map((r) => [r.word, r.term!]));
}

export interface ChunkRow {
  document_id: string;
  chunk_id: number;
  content: string;
  blurb: string;
  link: string | null;
  section_links: Record<string, string>;
  semantic_identifier: string;
  title: string;
  source_type: string;
  updated_at: Date;
  metadata: Record<string, string | string[]>;
  document_link: string | null;
  hidden: boolean;
  boost: number;
}

/**
 * Loads hits with their document, checking access once more: an index that lags behind the
 * database can never reveal a document the caller may not see.
 */
export async function loadChunks(
  db: DbExecutor,
  keys: { document_id: string; chunk_id: number }[],
  access: AccessScope,
): Promise<ChunkRow[]> {
  if (!keys.length) return [];
  const result = await sql<ChunkRow>`
    SELECT c.document_id, c.chunk_id, c.content, c.blurb, c.link, c.section_links,
      d.semantic_id AS semantic_identifier, d.title, d.source AS source_type, d.doc_updated_at AS updated_at,
      d.metadata, d.link AS document_link, d.hidden, d.boost
    FROM unnest(${keys.map((k) => k.document_id)}::text[], ${keys.map((k) => k.chunk_id)}::int[]) AS k(document_id, chunk_id)
    JOIN chunks c ON c.document_id = k.document_id AND c.chunk_id = k.chunk_id
    JOIN documents d ON d.id = c.document_id
    WHERE ${documentConditions({ include_hidden: true }, access)}`.execute(db);
  return result.rows;
}

const vectorColumnByDb = new WeakMap<object, Promise<boolean>>();

/** Whether `chunk_embeddings.embedding` is a pgvector column (else `real[]`). */
export function embeddingsUseVector(db: DbExecutor): Promise<boolean> {
  let known = vectorColumnByDb.get(db);
  if (!known) {
    known = sql<{ udt_name: string }>`
      SELECT udt_name FROM information_schema.columns
      WHERE table_name = 'chunk_embeddings' AND column_name = 'embedding'`
      .execute(db)
      .then((r) => r.rows[0]?.udt_name === 'vector');
    vectorColumnByDb.set(db, known);
  }
  return known;
}

/** Stores normalised embeddings; `vector` or `real[]` by what the database has. */
export async function upsertEmbeddings(
  db: DbExecutor,
  rows: { document_id: string; chunk_id: number; embedding: number[] }[],
): Promise<void> {
  if (!rows.length) return;
  const useVector = await embeddingsUseVector(db);
  const literal = (e: number[]) => `[${e.join(',')}]`;
  const values = rows.map(
    (r) =>
      sql`(${r.document_id}, ${r.chunk_id}, ${useVector ? sql`${literal(r.embedding)}::vector` : sql`${r.embedding}::real[]`})`,
  );
  await sql`
    INSERT INTO chunk_embeddings (document_id, chunk_id, embedding) VALUES ${sql.join(values)}
    ON CONFLICT (document_id, chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding`.execute(db);
}

export function deleteEmbeddings(db: DbExecutor, documentIds: string[]) {
  return db.deleteFrom('chunk_embeddings').where('document_id', 'in', documentIds).execute();
}

export function clearEmbeddings(db: DbExecutor) {
  return db.deleteFrom('chunk_embeddings').execute();
}

/** Chunks of these documents that have no embedding yet. */
export function chunksWithoutEmbedding(db: DbExecutor, documentIds: string[]) {
  return db
    .selectFrom('chunks as c')
    .leftJoin('chunk_embeddings as e', (j) =>
      j.onRef('e.document_id', '=', 'c.document_id').onRef('e.chunk_id', '=', 'c.chunk_id'),
    )
    .select(['c.document_id', 'c.chunk_id', 'c.title', 'c.content'])
    .where('c.document_id', 'in', documentIds)
    .where('e.chunk_id', 'is', null)
    .orderBy('c.document_id')
    .orderBy('c.chunk_id')
    .execute();
}

/**
 * Nearest chunks by cosine similarity (embeddings are stored normalised, so the dot product). With
 * pgvector the `<#>` operator; without it the dot product is computed in SQL over `real[]` — exact,
 * and linear in the number of chunks that pass access and filters.
 */
export async function vectorSearch(
  db: DbExecutor,
  args: { embedding: number[]; filters: IndexFilters; access: AccessScope; limit: number },
): Promise<SearchHit[]> {
  const where = documentConditions(args.filters, args.access);
  if (await embeddingsUseVector(db)) {
    const result = await sql<SearchHit>`
      SELECT e.document_id, e.chunk_id, (-(e.embedding <#> ${`[${args.embedding.join(',')}]`}::vector))::float8 AS score
      FROM chunk_embeddings e JOIN documents d ON d.id = e.document_id
      WHERE ${where}
      ORDER BY e.embedding <#> ${`[${args.embedding.join(',')}]`}::vector, e.document_id, e.chunk_id
      LIMIT ${args.limit}`.execute(db);
    return result.rows;
  }
  const result = await sql<SearchHit>`
    SELECT e.document_id, e.chunk_id,
      (SELECT sum(a * b) FROM unnest(e.embedding, ${args.embedding}::real[]) AS t(a, b))::float8 AS score
    FROM chunk_embeddings e JOIN documents d ON d.id = e.document_id
    WHERE ${where}
    ORDER BY score DESC, e.document_id, e.chunk_id
    LIMIT ${args.limit}`.execute(db);
  return result.rows;
}
