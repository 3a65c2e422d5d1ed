import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import type { IndexAttemptStatus } from './connectors.schemas.ts';

export interface ConnectorRow {
  id: number;
  name: string;
  source: string;
  input_type: string;
  connector_specific_config: Record<string, unknown>;
  refresh_freq: number | null;
  prune_freq: number | null;
  indexing_start: Date | null;
  access_type: 'public' | 'private' | 'sync';
  is_system: boolean;
  creator_id: string | null;
  credential_ids: number[];
  /** Groups of the connector's pairs (what curators are judged by). */
  group_ids: number[];
  time_created: Date;
  time_updated: Date;
}

const CONNECTOR_COLUMNS = sql`c.id, c.name, c.source, c.input_type, c.connector_specific_config, c.refresh_freq,
  c.prune_freq, c.indexing_start, c.access_type, c.is_system, c.creator_id::text AS creator_id,
  ARRAY(SELECT p.credential_id FROM cc_pairs p WHERE p.connector_id = c.id ORDER BY p.credential_id) AS credential_ids,
  ARRAY(SELECT DISTINCT g.group_id FROM cc_pairs p JOIN cc_pair_groups g ON g.cc_pair_id = p.id
        WHERE p.connector_id = c.id) AS group_ids,
  c.time_created, c.time_updated`;

export async function insertConnector(
  db: DbExecutor,
  row: Omit<
    ConnectorRow,
    'id' | 'credential_ids' | 'group_ids' | 'time_created' | 'time_updated' | 'is_system'
  >,
): Promise<number> {
  const result = await sql<{ id: number }>`
    INSERT INTO connectors (name, source, input_type, connector_specific_config, refresh_freq, prune_freq,
      indexing_start, access_type, creator_id)
    VALUES (${row.name}, ${row.source}, ${row.input_type}, ${JSON.stringify(row.connector_specific_config)}::jsonb,
      ${row.refresh_freq}, ${row.prune_freq}, ${row.indexing_start}, ${row.access_type}, ${row.creator_id}::uuid)
    RETURNING id`.execute(db);
  return result.rows[0]?.id as number;
}

export async function updateConnector(
  db: DbExecutor,
  id: number,
  row: Omit<
    ConnectorRow,
    'id' | 'credential_ids' | 'group_ids' | 'time_created' | 'time_updated' | 'is_system' | 'creator_id'
  >,
): Promise<void> {
  await sql`
    UPDATE connectors SET name = ${row.name}, source = ${row.source}, input_type = ${row.input_type},
      connector_specific_config = ${JSON.stringify(row.connector_specific_config)}::jsonb,
      refresh_freq = ${row.refresh_freq}, prune_freq = ${row.prune_freq}, indexing_start = ${row.indexing_start},
      access_type = ${row.access_type}, time_updated = now()
    WHERE id = ${id}`.execute(db);
}

export async function findConnector(db: DbExecutor, id: number): Promise<ConnectorRow | undefined> {
  const result =
    await sql<ConnectorRow>`SELECT ${CONNECTOR_COLUMNS} FROM connectors c WHERE c.id = ${id}`.execute(db);
  return result.rows[0];
}

/** Non-system connectors, optionally those linked to one credential. */
export async function listConnectors(
  db: DbExecutor,
  filter: { credentialId?: number | undefined },
): Promise<ConnectorRow[]> {
  const result = await sql<ConnectorRow>`
    SELECT ${CONNECTOR_COLUMNS} FROM connectors c
    WHERE NOT c.is_system
      AND (${filter.credentialId ?? null}::int IS NULL
           OR EXISTS (SELECT 1 FROM cc_pairs p WHERE p.connector_id = c.id AND p.credential_id = ${filter.credentialId ?? null}::int))
    ORDER BY c.id`.execute(db);
  return result.rows;
}

export async function deleteConnector(db: DbExecutor, id: number): Promise<void> {
  await sql`DELETE FROM connectors WHERE id = ${id}`.execute(db);
}

export interface CredentialRow {
  id: number;
  name: string | null;
  source: string;
  credential_json: string;
  admin_public: boolean;
  curator_public: boolean;
  user_id: string | null;
  groups: number[];
  time_created: Date;
  time_updated: Date;
}

const CREDENTIAL_COLUMNS = sql`k.id, k.name, k.source, k.credential_json, k.admin_public, k.curator_public,
  k.user_id::text AS user_id,
  ARRAY(SELECT g.group_id FROM credential_groups g WHERE g.credential_id = k.id ORDER BY g.group_id) AS groups,
  k.time_created, k.time_updated`;

export async function insertCredential(
  db: DbExecutor,
  row: Omit<CredentialRow, 'id' | 'groups' | 'time_created' | 'time_updated'>,
): Promise<number> {
  const result = await sql<{ id: number }>`
    INSERT INTO credentials (name, source, credential_json, admin_public, curator_public, user_id)
    VALUES (${row.name}, ${row.source}, ${row.credential_json}, ${row.admin_public}, ${row.curator_public},
      ${row.user_id}::uuid)
    RETURNING id`.execute(db);
  return result.rows[0]?.id as number;
}

export async function updateCredential(
  db: DbExecutor,
  id: number,
  row: Pick<CredentialRow, 'name' | 'credential_json' | 'admin_public' | 'curator_public'>,
): Promise<void> {
  await sql`
    UPDATE credentials SET name = ${row.name}, credential_json = ${row.credential_json},
      admin_public = ${row.admin_public}, curator_public = ${row.curator_public}, time_updated = now()
    WHERE id = ${id}`.execute(db);
}

export async function replaceCredentialGroups(db: DbExecutor, id: number, groupIds: number[]): Promise<void> {
  await sql`DELETE FROM credential_groups WHERE credential_id = ${id}`.execute(db);
  for (const groupId of groupIds) {
    await sql`INSERT INTO credential_groups (credential_id, group_id) VALUES (${id}, ${groupId})`.execute(db);
  }
}

export async function findCredential(db: DbExecutor, id: number): Promise<CredentialRow | undefined> {
  const result = await sql<CredentialRow>`
    SELECT ${CREDENTIAL_COLUMNS} FROM credentials k WHERE k.id = ${id} AND k.source <> 'ingestion_api'`.execute(
    db,
  );
  return result.rows[0];
}

export async function listCredentials(
  db: DbExecutor,
  filter: { source?: string | undefined },
): Promise<CredentialRow[]> {
  const result = await sql<CredentialRow>`
    SELECT ${CREDENTIAL_COLUMNS} FROM credentials k
    WHERE k.source <> 'ingestion_api' AND (${filter.source ?? null}::text IS NULL OR k.source = ${filter.source ?? null}::text)
      AND NOT EXISTS (SELECT 1 FROM cc_pairs p WHERE p.credential_id = k.id AND p.is_system)
    ORDER BY k.id`.execute(db);
  return result.rows;
}

export async function countPairsOfCredential(db: DbExecutor, id: number): Promise<number> {
  const result = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM cc_pairs WHERE credential_id = ${id}`.execute(db);
  return result.rows[0]?.n ?? 0;
}

export async function deleteCredential(db: DbExecutor, id: number): Promise<void> {
  await sql`DELETE FROM credentials WHERE id = ${id}`.execute(db);
}

export interface PairRow {
  id: number;
  name: string;
  connector_id: number;
  credential_id: number;
  status: 'scheduled' | 'initial_indexing' | 'active' | 'paused' | 'deleting' | 'invalid';
  access_type: 'public' | 'private' | 'sync';
  is_system: boolean;
  creator_id: string | null;
  in_repeated_error_state: boolean;
  last_successful_index_time: Date | null;
  last_pruned: Date | null;
  deletion_failure: string | null;
  groups: number[];
  num_docs_indexed: number;
  number_of_index_attempts: number;
  source: string;
}

const PAIR_COLUMNS = sql`p.id, p.name, p.connector_id, p.credential_id, p.status, p.access_type, p.is_system,
  p.creator_id::text AS creator_id, p.in_repeated_error_state, p.last_successful_index_time, p.last_pruned,
  p.deletion_failure,
  ARRAY(SELECT g.group_id FROM cc_pair_groups g WHERE g.cc_pair_id = p.id ORDER BY g.group_id) AS groups,
  (SELECT count(*)::int FROM document_by_cc_pair d WHERE d.cc_pair_id = p.id AND d.has_been_indexed) AS num_docs_indexed,
  (SELECT count(*)::int FROM index_attempts a WHERE a.cc_pair_id = p.id) AS number_of_index_attempts,
  (SELECT c.source FROM connectors c WHERE c.id = p.connector_id) AS source`;

export async function insertPair(
  db: DbExecutor,
  row: Pick<PairRow, 'name' | 'connector_id' | 'credential_id' | 'access_type' | 'creator_id'>,
): Promise<number> {
  const result = await sql<{ id: number }>`
    INSERT INTO cc_pairs (name, connector_id, credential_id, status, access_type, creator_id)
    VALUES (${row.name}, ${row.connector_id}, ${row.credential_id}, 'scheduled', ${row.access_type}, ${row.creator_id}::uuid)
    RETURNING id`.execute(db);
  return result.rows[0]?.id as number;
}

export async function pairNameTaken(db: DbExecutor, name: string): Promise<boolean> {
  const result = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM cc_pairs WHERE name = ${name}`.execute(db);
  return (result.rows[0]?.n ?? 0) > 0;
}

export async function findPair(db: DbExecutor, id: number): Promise<PairRow | undefined> {
  const result =
    await sql<PairRow>`SELECT ${PAIR_COLUMNS} FROM cc_pairs p WHERE p.id = ${id} AND NOT p.is_system`.execute(
      db,
    );
  return result.rows[0];
}

export async function findPairOf(
  db: DbExecutor,
  connectorId: number,
  credentialId: number,
): Promise<PairRow | undefined> {
  const result = await sql<PairRow>`
    SELECT ${PAIR_COLUMNS} FROM cc_pairs p
    WHERE p.connector_id = ${connectorId} AND p.credential_id = ${credentialId} AND NOT p.is_system`.execute(
    db,
  );
  return result.rows[0];
}

export async function listPairs(db: DbExecutor, filter: { connectorId?: number } = {}): Promise<PairRow[]> {
  const result = await sql<PairRow>`
    SELECT ${PAIR_COLUMNS} FROM cc_pairs p
    WHERE NOT p.is_system AND (${filter.connectorId ?? null}::int IS NULL OR p.connector_id = ${filter.connectorId ?? null}::int)
    ORDER BY p.id`.execute(db);
  return result.rows;
}

export async function setPairStatus(db: DbExecutor, id: number, status: PairRow['status']): Promise<void> {
  await sql`UPDATE cc_pairs SET status = ${status}, time_updated = now() WHERE id = ${id}`.execute(db);
}

export async function setDeletionFailure(db: DbExecutor, id: number, message: string | null): Promise<void> {
  await sql`UPDATE cc_pairs SET deletion_failure = ${message}, time_updated = now() WHERE id = ${id}`.execute(
    db,
  );
}

export interface AttemptRow {
  id: number;
  cc_pair_id: number;
  status: IndexAttemptStatus;
  from_beginning: boolean;
  poll_range_start: Date | null;
  poll_range_end: Date | null;
  checkpoint: unknown;
  docs_done: number;
  docs_total: number | null;
  new_docs_indexed: number;
  docs_removed: number;
  error_count: number;
  error_msg: string | null;
  worker_id: string | null;
  heartbeat_at: Date | null;
  time_started: Date | null;
  time_created: Date;
  time_updated: Date;
}

/** Queues an attempt unless one is already open for the pair; returns the open or new attempt id. */
export async function queueAttempt(db: DbExecutor, pairId: number, fromBeginning: boolean): Promise<number> {
  const open = await sql<{ id: number }>`
    SELECT id FROM index_attempts WHERE cc_pair_id = ${pairId} AND status IN ('not_started', 'in_progress')
    ORDER BY id LIMIT 1`.execute(db);
  if (open.rows[0]) return open.rows[0].id;
  const result = await sql<{ id: number }>`
    INSERT INTO index_attempts (cc_pair_id, from_beginning) VALUES (${pairId}, ${fromBeginning}) RETURNING id`.execute(
    db,
  );
  return result.rows[0]?.id as number;
}

export async function latestAttempt(db: DbExecutor, pairId: number): Promise<AttemptRow | undefined> {
  const result = await sql<AttemptRow>`
    SELECT * FROM index_attempts WHERE cc_pair_id = ${pairId} ORDER BY id DESC LIMIT 1`.execute(db);
  return result.rows[0];
}

export async function runningAttempt(db: DbExecutor, pairId: number): Promise<AttemptRow | undefined> {
  const result = await sql<AttemptRow>`
    SELECT * FROM index_attempts WHERE cc_pair_id = ${pairId} AND status = 'in_progress' ORDER BY id DESC LIMIT 1`.execute(
    db,
  );
  return result.rows[0];
}

export async function pageAttempts(db: DbExecutor, pairId: number, offset: number, limit: number) {
  const items = await sql<AttemptRow>`
    SELECT * FROM index_attempts WHERE cc_pair_id = ${pairId} ORDER BY id DESC OFFSET ${offset} LIMIT ${limit}`.execute(
    db,
  );
  const total = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM index_attempts WHERE cc_pair_id = ${pairId}`.execute(db);
  return { items: items.rows, total: total.rows[0]?.n ?? 0 };
}

export interface AttemptErrorRow {
  id: number;
  index_attempt_id: number;
  document_id: string | null;
  document_link: string | null;
  failure_message: string;
  time_created: Date;
}

export async function pageErrors(db: DbExecutor, pairId: number, offset: number, limit: number) {
  const items = await sql<AttemptErrorRow>`
    SELECT id, index_attempt_id, document_id, document_link, failure_message, time_created
    FROM index_attempt_errors WHERE cc_pair_id = ${pairId} ORDER BY id DESC OFFSET ${offset} LIMIT ${limit}`.execute(
    db,
  );
  const total = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM index_attempt_errors WHERE cc_pair_id = ${pairId}`.execute(db);
  return { items: items.rows, total: total.rows[0]?.n ?? 0 };
}

export async function insertAttemptErrors(
  db: DbExecutor,
  attemptId: number,
  pairId: number,
  errors: { document_id: string | null; document_link: string | null; failure_message: string }[],
): Promise<void> {
  for (const e of errors) {
    await sql`INSERT INTO index_attempt_errors (index_attempt_id, cc_pair_id, document_id, document_link, failure_message)
      VALUES (${attemptId}, ${pairId}, ${e.document_id}, ${e.document_link}, ${e.failure_message})`.execute(
      db,
    );
  }
}

/** Cancels every open attempt of the pair (pause, deletion); a running worker sees it at its next heartbeat. */
export async function cancelOpenAttempts(db: DbExecutor, pairId: number, reason: string): Promise<void> {
  await sql`UPDATE index_attempts SET status = 'canceled', error_msg = ${reason}, time_updated = now()
    WHERE cc_pair_id = ${pairId} AND status IN ('not_started', 'in_progress')`.execute(db);
}

/** Ids of the pair's documents that no other pair owns. */
export async function documentsOnlyOwnedBy(db: DbExecutor, pairId: number, limit: number): Promise<string[]> {
  const result = await sql<{ document_id: string }>`
    SELECT d.document_id FROM document_by_cc_pair d
    WHERE d.cc_pair_id = ${pairId}
      AND NOT EXISTS (SELECT 1 FROM document_by_cc_pair o WHERE o.document_id = d.document_id AND o.cc_pair_id <> ${pairId})
    LIMIT ${limit}`.execute(db);
  return result.rows.map((r) => r.document_id);
}

export async function deleteDocuments(db: DbExecutor, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await sql`DELETE FROM documents WHERE id = ANY(${ids}::text[])`.execute(db);
}

/** Documents this pair shares with others (their access is recomputed after the pair goes). */
export async function sharedDocumentsOf(db: DbExecutor, pairId: number): Promise<string[]> {
  const result = await sql<{ document_id: string }>`
    SELECT document_id FROM document_by_cc_pair WHERE cc_pair_id = ${pairId}`.execute(db);
  return result.rows.map((r) => r.document_id);
}

export async function deletePair(db: DbExecutor, id: number): Promise<void> {
  await sql`DELETE FROM cc_pairs WHERE id = ${id}`.execute(db);
}

export async function existingGroupIds(db: DbExecutor, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const result = await sql<{ id: number }>`SELECT id FROM user_groups WHERE id = ANY(${ids}::int[])`.execute(
    db,
  );
  return result.rows.map((r) => r.id);
}

export async function pairsInDeletion(db: DbExecutor): Promise<number[]> {
  const result = await sql<{
    id: number;
  }>`SELECT id FROM cc_pairs WHERE status = 'deleting' ORDER BY id`.execute(db);
  return result.rows.map((r) => r.id);
}
