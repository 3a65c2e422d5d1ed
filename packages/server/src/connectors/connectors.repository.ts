import { type Expression, expressionBuilder, type InferResult, sql } from 'kysely';
import { arrayOf, type DbExecutor } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import type {
  Attempt,
  AttemptError,
  CcPairStatus,
  NewCcPair,
  NewConnector,
  NewCredential,
} from './connectors.table.ts';

const expressions = expressionBuilder<Database>();

/** The database's clock (`now()`): every time the connectors' tables store is taken from it. */
export const now = () => expressions.fn<Date>('now');

/**
 * `now()` minus a number of seconds, on the database's clock. Raw SQL: the builder cannot call a
 * function with named arguments (`make_interval(secs => …)`).
 */
export function secondsAgo(seconds: number | Expression<number | null>) {
  return sql<Date>`now() - make_interval(secs => ${seconds})`;
}

function selectConnectors(db: DbExecutor) {
  return db
    .selectFrom('connectors as c')
    .selectAll('c')
    .select((eb) => [
      arrayOf(
        eb
          .selectFrom('cc_pairs as p')
          .select('p.credential_id')
          .whereRef('p.connector_id', '=', 'c.id')
          .orderBy('p.credential_id'),
      ).as('credential_ids'),
      // Groups of the connector's pairs (what curators are judged by).
      arrayOf(
        eb
          .selectFrom('cc_pairs as p')
          .innerJoin('cc_pair_groups as g', 'g.cc_pair_id', 'p.id')
          .select('g.group_id')
          .distinct()
          .whereRef('p.connector_id', '=', 'c.id'),
      ).as('group_ids'),
    ]);
}

/** A connector with the credentials it is paired with and the groups of its pairs. */
export type ConnectorRow = InferResult<ReturnType<typeof selectConnectors>>[number];

/** What a connector is created or replaced with; its configuration is stored as JSON. */
type ConnectorValues = Required<
  Pick<
    NewConnector,
    | 'name'
    | 'source'
    | 'input_type'
    | 'refresh_freq'
    | 'prune_freq'
    | 'indexing_start'
    | 'access_type'
    | 'creator_id'
  >
> & { connector_specific_config: Record<string, unknown> };

export async function insertConnector(db: DbExecutor, row: ConnectorValues): Promise<number> {
  const { id } = await db
    .insertInto('connectors')
    .values({ ...row, connector_specific_config: JSON.stringify(row.connector_specific_config) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

export async function updateConnector(
  db: DbExecutor,
  id: number,
  row: Omit<ConnectorValues, 'creator_id'>,
): Promise<void> {
  await db
    .updateTable('connectors')
    .set({
      ...row,
      connector_specific_config: JSON.stringify(row.connector_specific_config),
      time_updated: now(),
    })
    .where('id', '=', id)
    .execute();
}

export function findConnector(db: DbExecutor, id: number): Promise<ConnectorRow | undefined> {
  return selectConnectors(db).where('c.id', '=', id).executeTakeFirst();
}

/** Non-system connectors, optionally those linked to one credential. */
export function listConnectors(
  db: DbExecutor,
  filter: { credentialId?: number | undefined },
): Promise<ConnectorRow[]> {
  const { credentialId } = filter;
  let query = selectConnectors(db).where('c.is_system', '=', false);
  if (credentialId !== undefined)
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('cc_pairs as p')
          .select('p.id')
          .whereRef('p.connector_id', '=', 'c.id')
          .where('p.credential_id', '=', credentialId),
      ),
    );
  return query.orderBy('c.id').execute();
}

export async function deleteConnector(db: DbExecutor, id: number): Promise<void> {
  await db.deleteFrom('connectors').where('id', '=', id).execute();
}

function selectCredentials(db: DbExecutor) {
  return db
    .selectFrom('credentials as k')
    .selectAll('k')
    .select((eb) =>
      arrayOf(
        eb
          .selectFrom('credential_groups as g')
          .select('g.group_id')
          .whereRef('g.credential_id', '=', 'k.id')
          .orderBy('g.group_id'),
      ).as('groups'),
    )
    .where('k.source', '<>', 'ingestion_api');
}

/** A credential (its `credential_json` still encrypted) with the groups whose curators manage it. */
export type CredentialRow = InferResult<ReturnType<typeof selectCredentials>>[number];

export async function insertCredential(
  db: DbExecutor,
  row: Required<
    Pick<NewCredential, 'name' | 'source' | 'credential_json' | 'admin_public' | 'curator_public' | 'user_id'>
  >,
): Promise<number> {
  const { id } = await db.insertInto('credentials').values(row).returning('id').executeTakeFirstOrThrow();
  return id;
}

export async function updateCredential(
  db: DbExecutor,
  id: number,
  row: Pick<CredentialRow, 'name' | 'credential_json' | 'admin_public' | 'curator_public'>,
): Promise<void> {
  await db
    .updateTable('credentials')
    .set({ ...row, time_updated: now() })
    .where('id', '=', id)
    .execute();
}

export async function replaceCredentialGroups(db: DbExecutor, id: number, groupIds: number[]): Promise<void> {
  await db.deleteFrom('credential_groups').where('credential_id', '=', id).execute();
  if (!groupIds.length) return;
  await db
    .insertInto('credential_groups')
    .values(groupIds.map((group_id) => ({ credential_id: id, group_id })))
    .execute();
}

export function findCredential(db: DbExecutor, id: number): Promise<CredentialRow | undefined> {
  return selectCredentials(db).where('k.id', '=', id).executeTakeFirst();
}

export function listCredentials(
  db: DbExecutor,
  filter: { source?: string | undefined },
): Promise<CredentialRow[]> {
  const { source } = filter;
  let query = selectCredentials(db).where(({ not, exists, selectFrom }) =>
    not(
      exists(
        selectFrom('cc_pairs as p')
          .select('p.id')
          .whereRef('p.credential_id', '=', 'k.id')
          .where('p.is_system', '=', true),
      ),
    ),
  );
  if (source !== undefined) query = query.where('k.source', '=', source);
  return query.orderBy('k.id').execute();
}

export async function countPairsOfCredential(db: DbExecutor, id: number): Promise<number> {
  const { n } = await db
    .selectFrom('cc_pairs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('credential_id', '=', id)
    .executeTakeFirstOrThrow();
  return n;
}

export async function deleteCredential(db: DbExecutor, id: number): Promise<void> {
  await db.deleteFrom('credentials').where('id', '=', id).execute();
}

function selectPairs(db: DbExecutor) {
  return db
    .selectFrom('cc_pairs as p')
    .select([
      'p.id',
      'p.name',
      'p.connector_id',
      'p.credential_id',
      'p.status',
      'p.access_type',
      'p.is_system',
      'p.creator_id',
      'p.in_repeated_error_state',
      'p.last_successful_index_time',
      'p.last_pruned',
      'p.deletion_failure',
    ])
    .select((eb) => [
      arrayOf(
        eb
          .selectFrom('cc_pair_groups as g')
          .select('g.group_id')
          .whereRef('g.cc_pair_id', '=', 'p.id')
          .orderBy('g.group_id'),
      ).as('groups'),
      eb
        .selectFrom('document_by_cc_pair as d')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .whereRef('d.cc_pair_id', '=', 'p.id')
        .where('d.has_been_indexed', '=', true)
        .$asScalar()
        .$notNull()
        .as('num_docs_indexed'),
      eb
        .selectFrom('index_attempts as a')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .whereRef('a.cc_pair_id', '=', 'p.id')
        .$asScalar()
        .$notNull()
        .as('number_of_index_attempts'),
      eb
        .selectFrom('connectors as c')
        .select('c.source')
        .whereRef('c.id', '=', 'p.connector_id')
        .$asScalar()
        .$notNull()
        .as('source'),
    ])
    .where('p.is_system', '=', false);
}

/** A non-system CC pair with its groups, counts and its connector's source. */
export type PairRow = InferResult<ReturnType<typeof selectPairs>>[number];

export async function insertPair(
  db: DbExecutor,
  row: Required<Pick<NewCcPair, 'name' | 'connector_id' | 'credential_id' | 'access_type' | 'creator_id'>>,
): Promise<number> {
  const { id } = await db
    .insertInto('cc_pairs')
    .values({ ...row, status: 'scheduled' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

export async function pairNameTaken(db: DbExecutor, name: string): Promise<boolean> {
  const row = await db.selectFrom('cc_pairs').select('id').where('name', '=', name).executeTakeFirst();
  return row !== undefined;
}

export function findPair(db: DbExecutor, id: number): Promise<PairRow | undefined> {
  return selectPairs(db).where('p.id', '=', id).executeTakeFirst();
}

export function findPairOf(
  db: DbExecutor,
  connectorId: number,
  credentialId: number,
): Promise<PairRow | undefined> {
  return selectPairs(db)
    .where('p.connector_id', '=', connectorId)
    .where('p.credential_id', '=', credentialId)
    .executeTakeFirst();
}

export function listPairs(db: DbExecutor, filter: { connectorId?: number } = {}): Promise<PairRow[]> {
  const { connectorId } = filter;
  let query = selectPairs(db);
  if (connectorId !== undefined) query = query.where('p.connector_id', '=', connectorId);
  return query.orderBy('p.id').execute();
}

export async function setPairStatus(db: DbExecutor, id: number, status: CcPairStatus): Promise<void> {
  await db.updateTable('cc_pairs').set({ status, time_updated: now() }).where('id', '=', id).execute();
}

export async function setDeletionFailure(db: DbExecutor, id: number, message: string | null): Promise<void> {
  await db
    .updateTable('cc_pairs')
    .set({ deletion_failure: message, time_updated: now() })
    .where('id', '=', id)
    .execute();
}

/** An index attempt as stored. */
export type AttemptRow = Attempt;

const OPEN_ATTEMPT = ['not_started', 'in_progress'] as const;

/** Queues an attempt unless one is already open for the pair; returns the open or new attempt id. */
export async function queueAttempt(
  db: DbExecutor,
  pairId: number,
  fromBeginning: boolean,
  /** A from-beginning run the user asked for: a queued or waiting attempt starts over, no kept checkpoint is continued. */
  restart = false,
): Promise<number> {
  const open = await db
    .selectFrom('index_attempts')
    .select(['id', 'status'])
    .where('cc_pair_id', '=', pairId)
    .where('status', 'in', OPEN_ATTEMPT)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  if (open && restart && open.status === 'not_started') {
    await db
      .updateTable('index_attempts')
      .set({
        from_beginning: true,
        restart_requested: true,
        checkpoint: null,
        resume_at: null,
        waiting_reason: null,
        poll_range_start: null,
        poll_range_end: null,
        docs_resumed: 0,
        resumed_from: null,
        time_updated: now(),
      })
      .where('id', '=', open.id)
      .where('status', '=', 'not_started')
      .execute();
  }
  if (open) return open.id;
  const { id } = await db
    .insertInto('index_attempts')
    .values({ cc_pair_id: pairId, from_beginning: fromBeginning, restart_requested: restart })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

export function latestAttempt(db: DbExecutor, pairId: number): Promise<AttemptRow | undefined> {
  return db
    .selectFrom('index_attempts')
    .selectAll()
    .where('cc_pair_id', '=', pairId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export function runningAttempt(db: DbExecutor, pairId: number): Promise<AttemptRow | undefined> {
  return db
    .selectFrom('index_attempts')
    .selectAll()
    .where('cc_pair_id', '=', pairId)
    .where('status', '=', 'in_progress')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function pageAttempts(db: DbExecutor, pairId: number, offset: number, limit: number) {
  const items = await db
    .selectFrom('index_attempts')
    .selectAll()
    .where('cc_pair_id', '=', pairId)
    .orderBy('id', 'desc')
    .offset(offset)
    .limit(limit)
    .execute();
  const { n } = await db
    .selectFrom('index_attempts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('cc_pair_id', '=', pairId)
    .executeTakeFirstOrThrow();
  return { items, total: n };
}

/**
 * The reason of the pair's last failure: the error of its latest finished attempt when that failed,
 * or the latest per-document error of it (with the item's link) when it completed with errors.
 */
export async function lastFailure(db: DbExecutor, pairId: number): Promise<string | null> {
  const finished = await db
    .selectFrom('index_attempts')
    .select(['id', 'status', 'error_msg'])
    .where('cc_pair_id', '=', pairId)
    .where('status', 'in', ['success', 'completed_with_errors', 'failed'])
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!finished || finished.status === 'success') return null;
  if (finished.status === 'failed') return finished.error_msg;
  const item = await db
    .selectFrom('index_attempt_errors')
    .select(['document_id', 'document_link', 'failure_message'])
    .where('index_attempt_id', '=', finished.id)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!item) return finished.error_msg;
  const where = item.document_link ?? item.document_id;
  return where ? `${item.failure_message} (${where})` : item.failure_message;
}

export type AttemptErrorRow = Omit<AttemptError, 'cc_pair_id'>;

export async function pageErrors(db: DbExecutor, pairId: number, offset: number, limit: number) {
  const items: AttemptErrorRow[] = await db
    .selectFrom('index_attempt_errors')
    .select(['id', 'index_attempt_id', 'document_id', 'document_link', 'failure_message', 'time_created'])
    .where('cc_pair_id', '=', pairId)
    .orderBy('id', 'desc')
    .offset(offset)
    .limit(limit)
    .execute();
  const { n } = await db
    .selectFrom('index_attempt_errors')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('cc_pair_id', '=', pairId)
    .executeTakeFirstOrThrow();
  return { items, total: n };
}

/** The items an attempt failed on: their document ids, and whether some failure named no document. */
export async function failedItems(db: DbExecutor, attemptId: number) {
  const rows = await db
    .selectFrom('index_attempt_errors')
    .select('document_id')
    .where('index_attempt_id', '=', attemptId)
    .execute();
  return {
    documentIds: [...new Set(rows.flatMap((r) => (r.document_id ? [r.document_id] : [])))],
    unnamed: rows.some((r) => !r.document_id),
  };
}

export async function insertAttemptErrors(
  db: DbExecutor,
  attemptId: number,
  pairId: number,
  errors: Pick<AttemptError, 'document_id' | 'document_link' | 'failure_message'>[],
): Promise<void> {
  if (!errors.length) return;
  await db
    .insertInto('index_attempt_errors')
    .values(
      errors.map((e) => ({
        index_attempt_id: attemptId,
        cc_pair_id: pairId,
        document_id: e.document_id,
        document_link: e.document_link,
        failure_message: e.failure_message,
      })),
    )
    .execute();
}

/** Cancels every open attempt of the pair (pause, deletion); a running worker sees it at its next heartbeat. */
export async function cancelOpenAttempts(db: DbExecutor, pairId: number, reason: string): Promise<void> {
  await db
    .updateTable('index_attempts')
    .set({ status: 'canceled', error_msg: reason, time_updated: now() })
    .where('cc_pair_id', '=', pairId)
    .where('status', 'in', OPEN_ATTEMPT)
    .execute();
}

/** Ids of the pair's documents that no other pair owns. */
export async function documentsOnlyOwnedBy(db: DbExecutor, pairId: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('document_by_cc_pair as d')
    .select('d.document_id')
    .where('d.cc_pair_id', '=', pairId)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('document_by_cc_pair as o')
            .select('o.document_id')
            .whereRef('o.document_id', '=', 'd.document_id')
            .where('o.cc_pair_id', '<>', pairId),
        ),
      ),
    )
    .limit(limit)
    .execute();
  return rows.map((r) => r.document_id);
}

export async function deleteDocuments(db: DbExecutor, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await db
    .deleteFrom('documents')
    .where('id', '=', (eb) => eb.fn.any(eb.val(ids)))
    .execute();
}

/** Documents this pair shares with others (their access is recomputed after the pair goes). */
export async function sharedDocumentsOf(db: DbExecutor, pairId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('document_by_cc_pair')
    .select('document_id')
    .where('cc_pair_id', '=', pairId)
    .execute();
  return rows.map((r) => r.document_id);
}

export async function deletePair(db: DbExecutor, id: number): Promise<void> {
  await db.deleteFrom('cc_pairs').where('id', '=', id).execute();
}

export async function pairsInDeletion(db: DbExecutor): Promise<number[]> {
  const rows = await db
    .selectFrom('cc_pairs')
    .select('id')
    .where('status', '=', 'deleting')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}
