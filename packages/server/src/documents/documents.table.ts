import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Json, Timestamp } from '../db/columns.ts';
import type { Owner as OwnerInput } from './documents.schemas.ts';

export type AccessType = 'public' | 'private' | 'sync';
export type CcPairStatus = 'scheduled' | 'initial_indexing' | 'active' | 'paused' | 'deleting' | 'invalid';

export interface ConnectorsTable {
  id: Generated<number>;
  name: string;
  source: string;
  input_type: 'poll' | 'event' | 'load_state' | 'slim_retrieval';
  connector_specific_config: Json<Record<string, unknown>>;
  refresh_freq: number | null;
  prune_freq: number | null;
  indexing_start: Timestamp | null;
  access_type: Generated<AccessType>;
  is_system: Generated<boolean>;
  creator_id: string | null;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

export interface CredentialsTable {
  id: Generated<number>;
  name: string | null;
  source: string;
  credential_json: Generated<string>;
  admin_public: Generated<boolean>;
  curator_public: Generated<boolean>;
  user_id: string | null;
  time_created: CreatedAt;
  time_updated: CreatedAt;
  /** Origins (`https://host:port`) the secrets are bound to; null: not bound yet (see `connectors/service/secret-origins.ts`). */
  secret_origins: Json<string[]> | null;
  /** Who last entered the secrets: the one who may bind them while they are not bound yet. */
  secrets_entered_by: string | null;
}

export interface CcPairsTable {
  id: Generated<number>;
  name: string;
  connector_id: number;
  credential_id: number;
  status: Generated<CcPairStatus>;
  access_type: Generated<AccessType>;
  is_system: Generated<boolean>;
  creator_id: string | null;
  in_repeated_error_state: Generated<boolean>;
  last_successful_index_time: Timestamp | null;
  last_pruned: Timestamp | null;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

export interface CcPairGroupsTable {
  cc_pair_id: number;
  group_id: number;
}

export interface DocumentSetCcPairsTable {
  document_set_id: number;
  cc_pair_id: number;
}

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
  search_vector: ColumnType<string, never, never>;
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
  connectors: ConnectorsTable;
  credentials: CredentialsTable;
  cc_pairs: CcPairsTable;
  cc_pair_groups: CcPairGroupsTable;
  document_set_cc_pairs: DocumentSetCcPairsTable;
  documents: DocumentsTable;
  document_by_cc_pair: DocumentByCcPairTable;
  chunks: ChunksTable;
  search_vocabulary: SearchVocabularyTable;
  chunk_embeddings: ChunkEmbeddingsTable;
}
