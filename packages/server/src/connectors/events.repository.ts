import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';

export interface EventRow {
  id: number;
  cc_pair_id: number;
  refs: unknown[];
  status: 'queued' | 'in_progress' | 'done' | 'failed';
  tries: number;
  error_msg: string | null;
}

/**
 * Stores verified webhook deliveries, one per pair, to be processed by a worker. A delivery whose
 * source id the pair already has (a redelivery) is not stored again; answers the new rows' ids.
 */
export async function insertEvents(
  db: DbExecutor,
  rows: { cc_pair_id: number; refs: unknown[]; delivery_id: string | null }[],
): Promise<number[]> {
  const ids: number[] = [];
  for (const row of rows) {
    const result = await sql<{ id: string }>`
      INSERT INTO connector_events (cc_pair_id, refs, delivery_id)
      VALUES (${row.cc_pair_id}, ${JSON.stringify(row.refs)}::jsonb, ${row.delivery_id})
      ON CONFLICT (cc_pair_id, delivery_id) WHERE delivery_id IS NOT NULL DO NOTHING
      RETURNING id`.execute(db);
    if (result.rows[0]) ids.push(Number(result.rows[0].id));
  }
  return ids;
}

/** Events whose worker stopped sending heartbeats go back to the queue (their work is idempotent). */
export async function requeueStaleEvents(db: DbExecutor, staleMs: number): Promise<number[]> {
  const result = await sql<{ id: string }>`
    UPDATE connector_events SET status = 'queued', worker_id = NULL, time_updated = now()
    WHERE status = 'in_progress' AND heartbeat_at < now() - make_interval(secs => ${staleMs / 1000})
    RETURNING id`.execute(db);
  return result.rows.map((r) => Number(r.id));
}

/**
 * Claims the oldest due event of a pair that is not paused or being deleted, for this worker only
 * (`FOR UPDATE SKIP LOCKED`: two workers never claim the same event).
 */
export async function claimEvent(db: DbExecutor, workerId: string): Promise<EventRow | undefined> {
  const result = await sql<EventRow & { id: string }>`
    UPDATE connector_events SET status = 'in_progress', worker_id = ${workerId}, heartbeat_at = now(),
      tries = tries + 1, time_updated = now()
    WHERE id = (
      SELECT e.id FROM connector_events e JOIN cc_pairs p ON p.id = e.cc_pair_id
      WHERE e.status = 'queued' AND e.next_try_at <= now() AND p.status NOT IN ('paused', 'deleting')
      ORDER BY e.id
      FOR UPDATE OF e SKIP LOCKED
      LIMIT 1)
    RETURNING id, cc_pair_id, refs, status, tries, error_msg`.execute(db);
  const row = result.rows[0];
  return row ? { ...row, id: Number(row.id) } : undefined;
}

export async function heartbeatEvent(db: DbExecutor, id: number, workerId: string): Promise<boolean> {
  const result = await sql`UPDATE connector_events SET heartbeat_at = now()
    WHERE id = ${id} AND worker_id = ${workerId} AND status = 'in_progress' RETURNING id`.execute(db);
  return result.rows.length > 0;
}

/** Marks a claimed event processed; false when it is no longer this worker's (it was requeued). */
export async function finishEvent(
  db: DbExecutor,
  id: number,
  workerId: string,
  counts: { indexed: number; removed: number },
): Promise<boolean> {
  const result = await sql`UPDATE connector_events SET status = 'done', error_msg = NULL,
      documents_indexed = ${counts.indexed}, documents_removed = ${counts.removed}, worker_id = NULL, time_updated = now()
    WHERE id = ${id} AND worker_id = ${workerId} AND status = 'in_progress' RETURNING id`.execute(db);
  return result.rows.length > 0;
}

/** A failed try: queued again at `retryAt`, or `failed` for good when `retryAt` is null. */
export async function failEvent(
  db: DbExecutor,
  id: number,
  workerId: string,
  failure: { error: string; retryAt: Date | null },
): Promise<void> {
  await sql`UPDATE connector_events SET status = ${failure.retryAt ? 'queued' : 'failed'},
      next_try_at = coalesce(${failure.retryAt}, next_try_at), error_msg = ${failure.error}, worker_id = NULL,
      time_updated = now()
    WHERE id = ${id} AND worker_id = ${workerId} AND status = 'in_progress'`.execute(db);
}

/** Hands a claimed event back untried (worker stopping, pair paused): the try is not counted. */
export async function releaseEvent(db: DbExecutor, id: number, workerId: string): Promise<void> {
  await sql`UPDATE connector_events SET status = 'queued', tries = greatest(tries - 1, 0), worker_id = NULL,
      time_updated = now()
    WHERE id = ${id} AND worker_id = ${workerId} AND status = 'in_progress'`.execute(db);
}

export interface PairEventSummary {
  pending: number;
  failed: number;
  last_error: string | null;
  last_processed: Date | null;
}

/** Events of a pair waiting or running, failed for good, the latest error and the latest processed time. */
export async function pairEventSummary(db: DbExecutor, pairId: number): Promise<PairEventSummary> {
  return (await pairEventSummaries(db, [pairId])).get(pairId) ?? emptyEventSummary();
}

/** A pair without events. */
export const emptyEventSummary = (): PairEventSummary => ({
  pending: 0,
  failed: 0,
  last_error: null,
  last_processed: null,
});

/** {@link pairEventSummary} of several pairs in two queries; a pair without events gets zeros. */
export async function pairEventSummaries(
  db: DbExecutor,
  pairIds: readonly number[],
): Promise<Map<number, PairEventSummary>> {
  const summaries = new Map<number, PairEventSummary>(pairIds.map((id) => [id, emptyEventSummary()]));
  if (!pairIds.length) return summaries;
  const ids = [...summaries.keys()];
  const counts = await sql<{
    cc_pair_id: number;
    pending: string;
    failed: string;
    last_processed: Date | null;
  }>`
    SELECT cc_pair_id, count(*) FILTER (WHERE status IN ('queued', 'in_progress')) AS pending,
      count(*) FILTER (WHERE status = 'failed') AS failed,
      max(time_updated) FILTER (WHERE status = 'done') AS last_processed
    FROM connector_events WHERE cc_pair_id = ANY(${ids}::int[]) GROUP BY cc_pair_id`.execute(db);
  for (const row of counts.rows) {
    const summary = summaries.get(Number(row.cc_pair_id));
    if (!summary) continue;
    summary.pending = Number(row.pending);
    summary.failed = Number(row.failed);
    summary.last_processed = row.last_processed ?? null;
  }
  const errors = await sql<{ cc_pair_id: number; error_msg: string }>`
    SELECT DISTINCT ON (cc_pair_id) cc_pair_id, error_msg FROM connector_events
    WHERE cc_pair_id = ANY(${ids}::int[]) AND error_msg IS NOT NULL
    ORDER BY cc_pair_id, time_updated DESC, id DESC`.execute(db);
  for (const row of errors.rows) {
    const summary = summaries.get(Number(row.cc_pair_id));
    if (summary) summary.last_error = row.error_msg;
  }
  return summaries;
}

/** Processed events older than a day and failed ones older than a week are forgotten. */
export async function purgeOldEvents(db: DbExecutor): Promise<void> {
  await sql`DELETE FROM connector_events
    WHERE (status = 'done' AND time_updated < now() - interval '1 day')
      OR (status = 'failed' AND time_updated < now() - interval '7 days')`.execute(db);
}
