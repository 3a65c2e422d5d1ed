import type { DbExecutor } from '../db/database.ts';

/**
 * The document search index. Postgres (`documents`, `chunks`) is the source of truth: the service
 * commits a document and its chunks first, then hands them to the index; `kas reindex` replays every
 * document. Implementations: `postgres.ts` (full-text search over the `chunks` table itself),
 * `meilisearch.ts`, and `hybrid.ts` (either of them fused with vector search).
 *
 * Every implementation enforces `access` and `filters` itself (in SQL or as engine filters), so a hit
 * is always a chunk the caller may see. One contract suite (`search-index.contract.ts`) runs against all.
 */
export interface SearchIndex {
  readonly kind: 'postgres' | 'meilisearch' | 'hybrid';
  /** Makes the index current for these documents, replacing whatever it held for them. */
  indexDocuments(documents: IndexedDocument[]): Promise<void>;
  /**
   * Indexes kept in the database itself: what indexing new documents adds inside the transaction that
   * writes them (so ingestion commits once), instead of `indexDocuments` after commit. Called before that
   * transaction begins, so that its work in memory is not done while the transaction holds a connection;
   * `write` runs in the transaction, `committed` once it committed.
   */
  newInTransaction?(documents: readonly Pick<IndexedDocument, 'chunks' | 'vocabulary'>[]): {
    write(trx: DbExecutor): Promise<void>;
    committed(): void;
  };
  /** Removes the documents and all their chunks. Unknown ids are ignored. */
  deleteDocuments(documentIds: string[]): Promise<void>;
  /** Chunks matching the query, best first, at most `limit`. */
  search(request: SearchRequest): Promise<SearchHit[]>;
  /** Empties the index before a full rebuild. */
  clear(): Promise<void>;
  /** Brings derived statistics up to date now (otherwise done in the background after writes). */
  maintain?(): Promise<void>;
  /**
   * Embeds up to `limit` chunks that have no vector yet (indexed before embeddings were configured, or
   * while the endpoint was down): what it embedded and how many remain; null when there is nothing to do
   * (an index without vectors, or none missing since the last check).
   */
  backfillEmbeddings?(limit: number): Promise<{ embedded: number; remaining: number } | null>;
  /** Stops background work (maintenance timers) before the database closes. */
  close?(): Promise<void>;
}

/**
 * Who is searching: everything (admins), or what the user, their groups and their external principals
 * (`identity/principals.ts`: email, accounts at sources, external groups) may see.
 */
export type AccessScope =
  | { all: true }
  | { all: false; user_id: string; group_ids: number[]; external: string[] };

/** Filters in the form every index applies them; the service resolves API filters into this. */
export interface IndexFilters {
  source_types?: string[] | undefined;
  /** Document set names; a document belongs to a set when one of its CC pairs does. */
  document_sets?: string[] | undefined;
  /** Only documents updated at or after this instant. */
  time_cutoff?: Date | undefined;
  /** Encoded tags (`encodeTag`); a document matches when it has any of them. */
  tags?: string[] | undefined;
  document_ids?: string[] | undefined;
  include_hidden?: boolean | undefined;
}

export interface SearchRequest {
  query: string;
  filters: IndexFilters;
  access: AccessScope;
  limit: number;
  /**
   * When the exact query finds little, also try prefix matching and typo correction (default true).
   * Callers that will relax the query themselves turn it off to save the extra queries.
   */
  fallbacks?: boolean | undefined;
  /**
   * The caller will read the stored rows of these hits: every hit's, or only each document's best for
   * at most `perDocument` documents. An index kept in the database may return them with the ranking
   * (`SearchHit.row`), saving a lookup; others ignore this and the caller loads what is missing.
   */
  rows?: { perDocument?: number | undefined } | undefined;
}

export interface SearchHit {
  document_id: string;
  chunk_id: number;
  /** Relevance; higher is better. Comparable only within one response. */
  score: number;
  /** The chunk's stored row with its document's, when the index returned it (see `SearchRequest.rows`). */
  row?: StoredChunk | undefined;
}

/** A chunk as stored, with what a result needs of its document. */
export interface StoredChunk {
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

export interface IndexedChunk {
  chunk_id: number;
  title: string;
  content: string;
  blurb: string;
  link: string | null;
}

/** A document as every index sees it: document-level attributes denormalised next to its chunks. */
export interface IndexedDocument {
  document_id: string;
  semantic_identifier: string;
  source_type: string;
  updated_at: Date;
  tags: string[];
  document_sets: string[];
  hidden: boolean;
  is_public: boolean;
  access_user_ids: string[];
  access_group_ids: number[];
  /** External principals a `sync` source lists; absent means none. */
  access_external?: string[] | undefined;
  chunks: IndexedChunk[];
  /**
   * Its distinct words for typo correction (`correctionWordsOf`), separated by spaces, when computed
   * already (when the document was prepared): the Postgres index otherwise computes them from the chunks.
   */
  vocabulary?: string | undefined;
}

const VOCABULARY_WORD = /^\p{L}[\p{L}\p{N}]{2,39}$/u;

/** Distinct words of these chunks, for typo correction (the Postgres index's vocabulary). */
export function correctionWordsOf(chunks: readonly { title: string; content: string }[]): string[] {
  const words = new Set<string>();
  let lastTitle: string | undefined;
  for (const chunk of chunks) {
    // Every chunk carries the document's title: its words once.
    const texts = chunk.title === lastTitle ? [chunk.content] : [chunk.title, chunk.content];
    lastTitle = chunk.title;
    for (const text of texts) {
      for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
        if (!words.has(word) && VOCABULARY_WORD.test(word)) words.add(word);
      }
    }
  }
  return [...words];
}

const TAG_SEPARATOR = '\u001f';

/** One string per metadata key/value pair, as stored in `documents.tags` and in engine attributes. */
export function encodeTag(tag: { tag_key: string; tag_value: string }): string {
  return `${tag.tag_key}${TAG_SEPARATOR}${tag.tag_value}`;
}

export function decodeTag(tag: string): { tag_key: string; tag_value: string } {
  const at = tag.indexOf(TAG_SEPARATOR);
  return { tag_key: tag.slice(0, at), tag_value: tag.slice(at + 1) };
}

/** The one key of a chunk across result lists (fusion, de-duplication, joins with rows). */
export function chunkKey(chunk: { document_id: string; chunk_id: number }): string {
  return `${chunk.document_id}\u0000${chunk.chunk_id}`;
}
