import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import type { AttemptRow } from './connectors.repository.ts';

/** Attempts whose worker stopped sending heartbeats go back to the queue, checkpoint kept. */
export async function requeueStaleAttempts(db: DbExecutor, staleMs: number): Promise<number[]> {
  const result = await sql<{ id: number }>`
    UPDATE index_attempts SET status = 'not_started', worker_id = NULL, time_updated = now()
    WHERE status = 'in_progress' AND heartbeat_at < now() - make_interval(secs => ${staleMs / 1000})
    RETURNING id`.execute(db);
  return result.rows.map((r) => r.id);
}

/**
 * Queues an attempt for every pair that is due: never indexed, or its refresh interval passed
 * since the last attempt; not paused, deleting or waiting out a backoff; event connectors only once.
 */
export async function queueDueAttempts(db: DbExecutor): Promise<number[]> {
  const result = await sql<{ cc_pair_id: number }>`
    INSERT INTO index_attempts (cc_pair_id, from_beginning)
    SELECT p.id, p.last_successful_index_time IS NULL FROM cc_pairs p JOIN connectors c ON c.id = p.connector_id
    WHERE NOT p.is_system AND p.status IN ('scheduled', 'initial_indexing', 'active')
      AND (p.retry_after IS NULL OR p.retry_after <= now())
      AND NOT EXISTS (SELECT 1 FROM index_attempts o WHERE o.cc_pair_id = p.id AND o.status IN ('not_started', 'in_progress'))
      AND (
        p.last_successful_index_time IS NULL
        OR (c.refresh_freq IS NOT NULL AND c.input_type <> 'event' AND NOT EXISTS (
          SELECT 1 FROM index_attempts l WHERE l.cc_pair_id = p.id
            AND l.time_updated > now() - make_interval(secs => c.refresh_freq)))
      )
    ON CONFLICT DO NOTHING
    RETURNING cc_pair_id`.execute(db);
  return result.rows.map((r) => r.cc_pair_id);
}

/**
 * Claims the oldest queued attempt of a pair that is not paused or deleting, for this worker only
 * (`FOR UPDATE SKIP LOCKED`: two workers never claim the same attempt). Pairs this worker already
 * runs are skipped so one large source cannot take every slot.
 */
export async function claimAttempt(
  db: DbExecutor,
  workerId: string,
  busyPairIds: number[],
): Promise<AttemptRow | undefined> {
  const result = await sql<AttemptRow>`
    UPDATE index_attempts SET status = 'in_progress', worker_id = ${workerId}, heartbeat_at = now(),
      time_started = coalesce(time_started, now()), poll_range_end = coalesce(poll_range_end, now()), time_updated = now()
    WHERE id = (
      SELECT a.id FROM index_attempts a JOIN cc_pairs p ON p.id = a.cc_pair_id
      WHERE a.status = 'not_started' AND p.status NOT IN ('paused', 'deleting')
        AND NOT (a.cc_pair_id = ANY(${busyPairIds}::int[]))
      ORDER BY a.id
      FOR UPDATE OF a SKIP LOCKED
      LIMIT 1)
    RETURNING *`.execute(db);
  return result.rows[0];
}

/** Records a heartbeat; returns the pair's status, or null when the attempt is no longer this worker's. */
export async function heartbeat(db: DbExecutor, attemptId: number, workerId: string): Promise<string | null> {
  const result = await sql<{ status: string }>`
    UPDATE index_attempts a SET heartbeat_at = now()
    FROM cc_pairs p
    WHERE a.id = ${attemptId} AND a.worker_id = ${workerId} AND a.status = 'in_progress' AND p.id = a.cc_pair_id
    RETURNING p.status`.execute(db);
  return result.rows[0]?.status ?? null;
}

/** Stores a batch's progress and the checkpoint after it, if the attempt is still this worker's. */
export async function saveProgress(
  db: DbExecutor,
  attemptId: number,
  workerId: string,
  progress: {
    checkpoint: unknown;
    done: number;
    total: number | null;
    created: number;
    errors: number;
    poll_range_start: Date | null;
  },
): Promise<boolean> {
  const result = await sql<{ id: number }>`
    UPDATE index_attempts SET checkpoint = ${JSON.stringify(progress.checkpoint)}::jsonb,
      docs_done = docs_done + ${progress.done}, docs_total = ${progress.total},
      new_docs_indexed = new_docs_indexed + ${progress.created}, error_count = error_count + ${progress.errors},
      poll_range_start = ${progress.poll_range_start}, heartbeat_at = now(), time_updated = now()
    WHERE id = ${attemptId} AND worker_id = ${workerId} AND status = 'in_progress'
    RETURNING id`.execute(db);
  return result.rows.length > 0;
}

/** Hands a running attempt back to the queue (pause, worker shutdown): the checkpoint stays. */
export async function releaseAttempt(db: DbExecutor, attemptId: number, workerId: string): Promise<void> {
  await sql`UPDATE index_attempts SET status = 'not_started', worker_id = NULL, time_updated = now()
    WHERE id = ${attemptId} AND worker_id = ${workerId} AND status = 'in_progress'`.execute(db);
}

export async function finishAttempt(
  db: DbExecutor,
  attemptId: number,
  workerId: string,
  outcome: {
    status: 'success' | 'completed_with_errors' | 'failed';
    error_msg: string | null;
    removed: number;
  },
): Promise<boolean> {
  const result = await sql<{ id: number }>`
    UPDATE index_attempts SET status = ${outcome.status}, error_msg = ${outcome.error_msg},
      docs_removed = docs_removed + ${outcome.removed}, time_updated = now()
    WHERE id = ${attemptId} AND worker_id = ${workerId} AND status = 'in_progress'
    RETURNING id`.execute(db);
  return result.rows.length > 0;
}

export async function markPairSucceeded(
  db: DbExecutor,
  pairId: number,
  pollEnd: Date,
  pruned: boolean,
): Promise<void> {
  await sql`UPDATE cc_pairs SET status = CASE WHEN status IN ('scheduled', 'initial_indexing') THEN 'active' ELSE status END,
      last_successful_index_time = ${pollEnd}, consecutive_failures = 0, in_repeated_error_state = false,
      retry_after = NULL, last_pruned = CASE WHEN ${pruned} THEN now() ELSE last_pruned END, time_updated = now()
    WHERE id = ${pairId}`.execute(db);
}

export async function markPairStarted(db: DbExecutor, pairId: number): Promise<void> {
  await sql`UPDATE cc_pairs SET status = 'initial_indexing', time_updated = now()
    WHERE id = ${pairId} AND status = 'scheduled'`.execute(db);
}

/** Counts a failure; from `repeatedAfter` consecutive failures the pair is in a repeated error state. */
export async function markPairFailed(
  db: DbExecutor,
  pairId: number,
  retryAt: Date,
  repeatedAfter: number,
): Promise<number> {
  const result = await sql<{ consecutive_failures: number }>`
    UPDATE cc_pairs SET consecutive_failures = consecutive_failures + 1, retry_after = ${retryAt},
      in_repeated_error_state = consecutive_failures + 1 >= ${repeatedAfter}, time_updated = now()
    WHERE id = ${pairId} RETURNING consecutive_failures`.execute(db);
  return result.rows[0]?.consecutive_failures ?? 0;
}

/** Where the last successful poll ended (the next poll window starts there, minus an overlap). */
export async function lastSuccessfulPollEnd(db: DbExecutor, pairId: number): Promise<Date | null> {
  const result = await sql<{ poll_range_end: Date | null }>`
    SELECT poll_range_end FROM index_attempts WHERE cc_pair_id = ${pairId} AND status IN ('success', 'completed_with_errors')
    ORDER BY id DESC LIMIT 1`.execute(db);
  return result.rows[0]?.poll_range_end ?? null;
}

/** Document ids of the pair not seen by a full run (vanished from the source). */
export async function pairDocumentIds(db: DbExecutor, pairId: number): Promise<string[]> {
  const result = await sql<{ document_id: string }>`
    SELECT document_id FROM document_by_cc_pair WHERE cc_pair_id = ${pairId}`.execute(db);
  return result.rows.map((r) => r.document_id);
}

/** Removes the pair's ownership of these documents; returns those no pair owns any more (to delete). */
export async function dropOwnership(db: DbExecutor, pairId: number, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  await sql`DELETE FROM document_by_cc_pair WHERE cc_pair_id = ${pairId} AND document_id = ANY(${ids}::text[])`.execute(
    db,
  );
  const orphans = await sql<{ id: string }>`
    SELECT d.id FROM documents d WHERE d.id = ANY(${ids}::text[])
      AND NOT EXISTS (SELECT 1 FROM document_by_cc_pair o WHERE o.document_id = d.id)`.execute(db);
  return orphans.rows.map((r) => r.id);
}

export async function setRetryAfter(db: DbExecutor, pairId: number, at: Date): Promise<void> {
  await sql`UPDATE cc_pairs SET retry_after = ${at} WHERE id = ${pairId}`.execute(db);
}

/**
 * Claims a pair whose prune interval passed (its `last_pruned` is set now, so another worker does not
 * prune it too): active, indexed at least once, no attempt running, not among `busyPairIds`.
 */
export async function claimDuePrune(db: DbExecutor, busyPairIds: number[]): Promise<number | undefined> {
  const result = await sql<{ id: number }>`
    UPDATE cc_pairs SET last_pruned = now()
    WHERE id = (
      SELECT p.id FROM cc_pairs p JOIN connectors c ON c.id = p.connector_id
      WHERE NOT p.is_system AND c.prune_freq IS NOT NULL AND p.status = 'active'
        AND p.last_successful_index_time IS NOT NULL
        AND (p.last_pruned IS NULL OR p.last_pruned < now() - make_interval(secs => c.prune_freq))
        AND NOT EXISTS (SELECT 1 FROM index_attempts a WHERE a.cc_pair_id = p.id AND a.status = 'in_progress')
        AND NOT (p.id = ANY(${busyPairIds}::int[]))
      ORDER BY p.last_pruned NULLS FIRST, p.id
      FOR UPDATE OF p SKIP LOCKED
      LIMIT 1)
    RETURNING id`.execute(db);
  return result.rows[0]?.id;
}

/**
 * Sets the source's access on documents of the pair (all of them when `documentIds` is null); returns
 * the ids whose access changed, whose combined access must then be recomputed. Their content hash
 * (which covers the access they were written with) is forgotten, so the next sync writes them in full.
 */
export async function setExternalAccess(
  db: DbExecutor,
  pairId: number,
  documentIds: string[] | null,
  access: { principals: readonly string[]; is_public: boolean },
): Promise<string[]> {
  const principals = [...new Set(access.principals)].sort();
  const result = await sql<{ id: string }>`
    UPDATE documents d SET access_external = ${principals}::text[], external_public = ${access.is_public},
      content_hash = ''
    FROM document_by_cc_pair o
    WHERE o.document_id = d.id AND o.cc_pair_id = ${pairId}
      AND (${documentIds}::text[] IS NULL OR d.id = ANY(${documentIds}::text[]))
      AND (d.access_external IS DISTINCT FROM ${principals}::text[] OR d.external_public <> ${access.is_public})
    RETURNING d.id`.execute(db);
  return result.rows.map((r) => r.id);
}
