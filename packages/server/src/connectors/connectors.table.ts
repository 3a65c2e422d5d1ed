import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { CreatedAt, Json, Timestamp } from '../db/columns.ts';
import type { IndexAttemptStatus } from './connectors.schemas.ts';

export type AccessType = 'public' | 'private' | 'sync';
export type CcPairStatus = 'scheduled' | 'initial_indexing' | 'active' | 'paused' | 'deleting' | 'invalid';
export type EventStatus = 'queued' | 'in_progress' | 'done' | 'failed';

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
  /** Encrypted with the app's secrets; empty for credentials stored without one. */
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

/** Groups whose curators manage a credential. */
export interface CredentialGroupsTable {
  credential_id: number;
  group_id: number;
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
  deletion_failure: string | null;
  consecutive_failures: Generated<number>;
  /** A failed pair is not queued again before this (backoff). */
  retry_after: Timestamp | null;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

export interface CcPairGroupsTable {
  cc_pair_id: number;
  group_id: number;
}

/** One indexing run of a pair: claimed by one worker, which sends heartbeats and stores a checkpoint. */
export interface IndexAttemptsTable {
  id: Generated<number>;
  cc_pair_id: number;
  status: Generated<IndexAttemptStatus>;
  from_beginning: Generated<boolean>;
  poll_range_start: Timestamp | null;
  poll_range_end: Timestamp | null;
  checkpoint: ColumnType<unknown, string | null | undefined, string | null>;
  docs_done: Generated<number>;
  docs_total: number | null;
  new_docs_indexed: Generated<number>;
  docs_removed: Generated<number>;
  error_count: Generated<number>;
  error_msg: string | null;
  worker_id: string | null;
  heartbeat_at: Timestamp | null;
  time_started: Timestamp | null;
  /** A rate-limited attempt is queued but not claimed before this (it resumes from its checkpoint). */
  resume_at: Timestamp | null;
  /** Why the attempt waits until `resume_at` (the source's rate-limit message). */
  waiting_reason: string | null;
  /** When the current claim of the attempt started (null while queued, waiting or paused). */
  run_started_at: Timestamp | null;
  /** Time spent running in earlier claims (not waiting, not paused): rate and ETA use only running time. */
  active_ms: Generated<number>;
  /** Documents indexed by the failed attempts whose checkpoint this one continues. */
  docs_resumed: Generated<number>;
  /** The failed attempt whose checkpoint this one continues. */
  resumed_from: number | null;
  /** A from-beginning run asked for by a user: it does not continue a kept checkpoint. */
  restart_requested: Generated<boolean>;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

export interface IndexAttemptErrorsTable {
  id: Generated<number>;
  index_attempt_id: number;
  cc_pair_id: number;
  document_id: string | null;
  document_link: string | null;
  failure_message: string;
  time_created: CreatedAt;
}

/** A verified webhook delivery of an `event` connector, waiting for (or processed by) a worker. */
export interface ConnectorEventsTable {
  /** bigserial; int8 is read as a number on both databases (db/database.ts). */
  id: Generated<number>;
  cc_pair_id: number;
  refs: Json<unknown[]>;
  status: Generated<EventStatus>;
  tries: Generated<number>;
  next_try_at: CreatedAt;
  worker_id: string | null;
  heartbeat_at: Timestamp | null;
  error_msg: string | null;
  documents_indexed: Generated<number>;
  documents_removed: Generated<number>;
  /** The source's id of the delivery (a redelivery is stored once). */
  delivery_id: string | null;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

/** A file uploaded for `file` connectors, stored as it came. */
export interface ConnectorFilesTable {
  id: Generated<string>;
  name: string;
  content_type: string;
  data: Uint8Array;
  uploaded_by: string | null;
  created_at: CreatedAt;
}

export interface ConnectorsTables {
  connectors: ConnectorsTable;
  credentials: CredentialsTable;
  credential_groups: CredentialGroupsTable;
  cc_pairs: CcPairsTable;
  cc_pair_groups: CcPairGroupsTable;
  index_attempts: IndexAttemptsTable;
  index_attempt_errors: IndexAttemptErrorsTable;
  connector_events: ConnectorEventsTable;
  connector_files: ConnectorFilesTable;
}

export type Connector = Selectable<ConnectorsTable>;
export type NewConnector = Insertable<ConnectorsTable>;
export type ConnectorUpdate = Updateable<ConnectorsTable>;
export type Credential = Selectable<CredentialsTable>;
export type NewCredential = Insertable<CredentialsTable>;
export type CredentialUpdate = Updateable<CredentialsTable>;
export type CcPair = Selectable<CcPairsTable>;
export type NewCcPair = Insertable<CcPairsTable>;
export type Attempt = Selectable<IndexAttemptsTable>;
export type AttemptError = Selectable<IndexAttemptErrorsTable>;
export type NewAttemptError = Insertable<IndexAttemptErrorsTable>;
export type ConnectorEvent = Selectable<ConnectorEventsTable>;
export type NewConnectorEvent = Insertable<ConnectorEventsTable>;
export type ConnectorFile = Selectable<ConnectorFilesTable>;
export type NewConnectorFile = Insertable<ConnectorFilesTable>;
