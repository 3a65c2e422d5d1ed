import type { ColumnType, Generated, Selectable } from 'kysely';
import type { CreatedAt, Json, Timestamp } from '../db/columns.ts';
import type { Owner as OwnerInput } from './documents.schemas.ts';

/** An owner as stored: the API's `DocumentOwner` without its null fields. */
export type Owner = { [K in keyof OwnerInput]?: NonNullable<OwnerInput[K]> };

export interface DocumentsTable {
  id: string;
  semantic_id: string;
  title: string;
  link: string | null;
  source: string;
  from_ingestion_api: Generated<boolean>;
  metadata: Json<Record<string, string | string[]>>;
  tags: string[];
  primary_owners: Json<Owner[]>;
  secondary_owners: Json<Owner[]>;
  doc_updated_at: Timestamp;
  content_hash: string;
  chunk_count: number;
  is_public: boolean;
  access_user_ids: string[];
  access_group_ids: number[];
  /** External principals a `sync` source lists (`email:…`, `user:<source>:…`, `group:<source>:…`). */
  access_external: Generated<string[]>;
  /** The `sync` source itself makes the document public (shared with anyone). */
  external_public: Generated<boolean>;
  hidden: Generated<boolean>;
  /** Being written in stages (a large new document on the embedded database): invisible to every reader. */
  pending: Generated<boolean>;
  boost: Generated<number>;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

export interface DocumentByCcPairTable {
  document_id: string;
  cc_pair_id: number;
  has_been_indexed: Generated<boolean>;
}

export interface ChunksTable {
  document_id: string;
  chunk_id: number;
  title: string;
  content: string;
  blurb: string;
  link: string | null;
  section_links: Json<Record<string, string>>;
  token_count: number;
  /**
   * The chunk's tsvector and BM25 index, read by search's ranking SQL: computed by the statement that
   * inserts it (`chunkRows` in documents.repository.ts), or else by a row trigger (migrations 0011,
   * 0032), which also recomputes them when the title or content changes. Inserted only by `chunkRows`
   * (never as values of kas's own), never updated.
   */
  search_vector: ColumnType<string, string, never>;
  bm25_terms: ColumnType<string[], string[], never>;
  bm25_weights: ColumnType<number[], number[], never>;
  bm25_length: ColumnType<number, number, never>;
  bm25_title_length: ColumnType<number, number, never>;
  bm25_boost: ColumnType<number, number, never>;
}

export interface SearchVocabularyTable {
  term: string;
}

export interface ChunkEmbeddingsTable {
  document_id: string;
  chunk_id: number;
  /** `vector` with pgvector, `real[]` without; always written and read through SQL casts. */
  embedding: ColumnType<unknown, never, never>;
}

export interface DocumentsTables {
  documents: DocumentsTable;
  document_by_cc_pair: DocumentByCcPairTable;
  chunks: ChunksTable;
  search_vocabulary: SearchVocabularyTable;
  chunk_embeddings: ChunkEmbeddingsTable;
}

export type Document = Selectable<DocumentsTable>;
