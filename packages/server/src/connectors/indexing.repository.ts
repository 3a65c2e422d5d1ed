import { type Expression, sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import { type AttemptRow, now, secondsAgo } from './connectors.repository.ts';
import type { CcPairStatus } from './connectors.table.ts';

/** Milliseconds from the current claim's start (`run_started_at`) to `until` (now by default); 0 when not running. */
function runningMs(until: Expression<Date | null> = sql<Date>`now()`) {
  return sql<number>`coalesce(floor(extract(epoch from (${until} - run_started_at)) * 1000), 0)::bigint`;
}

/** Attempts whose worker stopped sending heartbeats go back to the queue, checkpoint kept. */
export async function requeueStaleAttempts(db: DbExecutor, staleMs: number): Promise<number[]> {
  const rows = await db
    .updateTable('index_attempts')
    .set((eb) => ({
      status: 'not_started',
      worker_id: null,
      active_ms: eb('active_ms', '+', runningMs(eb.ref('heartbeat_at'))),
      run_started_at: null,
      time_updated: now(),
    }))
    .where('status', '=', 'in_progress')
    .where('heartbeat_at', '<', secondsAgo(staleMs / 1000))
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Queues an attempt for every pair that is due: never indexed, or its refresh interval passed
 * since the last attempt; not paused, deleting or waiting out a backoff; event connectors only once.
 */
export async function queueDueAttempts(db: DbExecutor): Promise<number[]> {
  const rows = await db
    .insertInto('index_attempts')
    .columns(['cc_pair_id', 'from_beginning'])
    .expression((eb) =>
      eb
        .selectFrom('cc_pairs as p')
        .innerJoin('connectors as c', 'c.id', 'p.connector_id')
        .select((eb) => ['p.id', eb('p.last_successful_index_time', 'is', null).as('from_beginning')])
        .where('p.is_system', '=', false)
        .where('p.status', 'in', ['scheduled', 'initial_indexing', 'active'])
        .where((eb) => eb.or([eb('p.retry_after', 'is', null), eb('p.retry_after', '<=', now())]))
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('index_attempts as o')
                .select('o.id')
                .whereRef('o.cc_pair_id', '=', 'p.id')
                .where('o.status', 'in', ['not_started', 'in_progress']),
            ),
          ),
        )
        .where((eb) =>
          eb.or([
            eb('p.last_successful_index_time', 'is', null),
            eb.and([
              eb('c.refresh_freq', 'is not', null),
              eb('c.input_type', '<>', 'event'),
              eb.not(
                eb.exists(
                  eb
                    .selectFrom('index_attempts as l')
                    .select('l.id')
                    .whereRef('l.cc_pair_id', '=', 'p.id')
                    .where('l.time_updated', '>', secondsAgo(eb.ref('c.refresh_freq'))),
                ),
              ),
            ]),
          ]),
        ),
    )
    .onConflict((oc) => oc.doNothing())
    .returning('cc_pair_id')
    .execute();
  return rows.map((r) => r.cc_pair_id);
}

/**
 * Claims the oldest queued attempt of a pair that is not paused or deleting, for this worker only
 * (`FOR UPDATE SKIP LOCKED`: two workers never claim the same attempt). Pairs this worker already
 * runs are skipped so one large source cannot take every slot.
 */
export function claimAttempt(
  db: DbExecutor,
  workerId: string,
  busyPairIds: number[],
): Promise<AttemptRow | undefined> {
  return db
    .updateTable('index_attempts')
    .set((eb) => ({
      status: 'in_progress',
      worker_id: workerId,
      heartbeat_at: now(),
      time_started: eb.fn.coalesce('time_started', now()),
      run_started_at: now(),
      resume_at: null,
      waiting_reason: null,
      poll_range_end: eb.fn.coalesce('poll_range_end', now()),
      time_updated: now(),
    }))
    .where('id', '=', (eb) =>
      eb
        .selectFrom('index_attempts as a')
        .innerJoin('cc_pairs as p', 'p.id', 'a.cc_pair_id')
        .select('a.id')
        .where('a.status', '=', 'not_started')
        .where((eb) => eb.or([eb('a.resume_at', 'is', null), eb('a.resume_at', '<=', now())]))
        .where('p.status', 'not in', ['paused', 'deleting'])
        .$if(busyPairIds.length > 0, (qb) => qb.where('a.cc_pair_id', 'not in', busyPairIds))
        .orderBy('a.id')
        .forUpdate('a')
        .skipLocked()
        .limit(1),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Records a heartbeat; returns the pair's status, or null when the attempt is no longer this worker's. */
export async function heartbeat(db: DbExecutor, attemptId: number, workerId: string): Promise<string | null> {
  const row = await db
    .updateTable('index_attempts as a')
    .from('cc_pairs as p')
    .set({ heartbeat_at: now() })
    .where('a.id', '=', attemptId)
    .where('a.worker_id', '=', workerId)
    .where('a.status', '=', 'in_progress')
    .whereRef('p.id', '=', 'a.cc_pair_id')
    .returning('p.status')
    .executeTakeFirst();
  return row?.status ?? null;
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
  const row = await db
    .updateTable('index_attempts')
    .set((eb) => ({
      checkpoint: JSON.stringify(progress.checkpoint) ?? null,
      docs_done: eb('docs_done', '+', progress.done),
      docs_total: progress.total,
      new_docs_indexed: eb('new_docs_indexed', '+', progress.created),
      error_count: eb('error_count', '+', progress.errors),
      poll_range_start: progress.poll_range_start,
      heartbeat_at: now(),
      time_updated: now(),
    }))
    .where('id', '=', attemptId)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Hands a running attempt back to the queue (pause, worker shutdown): the checkpoint stays. */
export async function releaseAttempt(db: DbExecutor, attemptId: number, workerId: string): Promise<void> {
  await db
    .updateTable('index_attempts')
    .set((eb) => ({
      status: 'not_started',
      worker_id: null,
      active_ms: eb('active_ms', '+', runningMs()),
      run_started_at: null,
      time_updated: now(),
    }))
    .where('id', '=', attemptId)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .execute();
}

/**
 * A rate-limited attempt goes back to the queue with its checkpoint, not claimed before `until`: the
 * worker is free meanwhile and the scheduler resumes it then. Returns false when it is no longer this worker's.
 */
export async function waitAttempt(
  db: DbExecutor,
  attemptId: number,
  workerId: string,
  until: Date,
  reason: string,
): Promise<boolean> {
  const row = await db
    .updateTable('index_attempts')
    .set((eb) => ({
      status: 'not_started',
      worker_id: null,
      resume_at: until,
      waiting_reason: reason,
      active_ms: eb('active_ms', '+', runningMs()),
      run_started_at: null,
      time_updated: now(),
    }))
    .where('id', '=', attemptId)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * A claimed attempt with no checkpoint continues the checkpoint of the pair's previous attempt when
 * that one failed part-way (rate limit, transient error, a bug fixed since): same poll window, the
 * documents it indexed counted apart. A from-beginning run the user asked for starts over.
 * Returns the attempt as it now is.
 */
export async function continueFailedAttempt(db: DbExecutor, attempt: AttemptRow): Promise<AttemptRow> {
  if (attempt.checkpoint !== null || attempt.restart_requested) return attempt;
  const previous = await db
    .selectFrom('index_attempts')
    .selectAll()
    .where('cc_pair_id', '=', attempt.cc_pair_id)
    .where('id', '<', attempt.id)
    .where('status', 'not in', ['not_started', 'in_progress'])
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (previous?.status !== 'failed' || previous.checkpoint === null) return attempt;
  const row = await db
    .updateTable('index_attempts')
    .set({
      checkpoint: JSON.stringify(previous.checkpoint),
      poll_range_start: previous.poll_range_start,
      poll_range_end: previous.poll_range_end,
      docs_total: previous.docs_total,
      docs_resumed: previous.docs_resumed + previous.docs_done,
      from_beginning: previous.from_beginning,
      resumed_from: previous.id,
      time_updated: now(),
    })
    .where('id', '=', attempt.id)
    .returningAll()
    .executeTakeFirst();
  return row ?? attempt;
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
  const row = await db
    .updateTable('index_attempts')
    .set((eb) => ({
      status: outcome.status,
      error_msg: outcome.error_msg,
      docs_removed: eb('docs_removed', '+', outcome.removed),
      active_ms: eb('active_ms', '+', runningMs()),
      run_started_at: null,
      time_updated: now(),
    }))
    .where('id', '=', attemptId)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function markPairSucceeded(
  db: DbExecutor,
  pairId: number,
  pollEnd: Date,
  pruned: boolean,
): Promise<void> {
  await db
    .updateTable('cc_pairs')
    .set((eb) => ({
      status: eb
        .case()
        .when('status', 'in', ['scheduled', 'initial_indexing'])
        .then('active' as CcPairStatus)
        .else(eb.ref('status'))
        .end(),
      last_successful_index_time: pollEnd,
      consecutive_failures: 0,
      in_repeated_error_state: false,
      retry_after: null,
      ...(pruned ? { last_pruned: now() } : {}),
      time_updated: now(),
    }))
    .where('id', '=', pairId)
    .execute();
}

export async function markPairStarted(db: DbExecutor, pairId: number): Promise<void> {
  await db
    .updateTable('cc_pairs')
    .set({ status: 'initial_indexing', time_updated: now() })
    .where('id', '=', pairId)
    .where('status', '=', 'scheduled')
    .execute();
}

/** Counts a failure; from `repeatedAfter` consecutive failures the pair is in a repeated error state. */
export async function markPairFailed(
  db: DbExecutor,
  pairId: number,
  retryAt: Date,
  repeatedAfter: number,
): Promise<number> {
  const row = await db
    .updateTable('cc_pairs')
    .set((eb) => ({
      consecutive_failures: eb('consecutive_failures', '+', 1),
      retry_after: retryAt,
      in_repeated_error_state: eb(eb('consecutive_failures', '+', 1), '>=', repeatedAfter).$castTo<boolean>(),
      time_updated: now(),
    }))
    .where('id', '=', pairId)
    .returning('consecutive_failures')
    .executeTakeFirst();
  return row?.consecutive_failures ?? 0;
}

/** The pair's last attempt that completed (with or without per-item errors): its id, status and window. */
export async function lastCompletedAttempt(db: DbExecutor, pairId: number) {
  return db
    .selectFrom('index_attempts')
    .select(['id', 'status', 'poll_range_start', 'poll_range_end'])
    .where('cc_pair_id', '=', pairId)
    .where('status', 'in', ['success', 'completed_with_errors'])
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Document ids of the pair not seen by a full run (vanished from the source). */
export async function pairDocumentIds(db: DbExecutor, pairId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('document_by_cc_pair')
    .select('document_id')
    .where('cc_pair_id', '=', pairId)
    .execute();
  return rows.map((r) => r.document_id);
}

/** Removes the pair's ownership of these documents; returns those no pair owns any more (to delete). */
export async function dropOwnership(db: DbExecutor, pairId: number, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  await db
    .deleteFrom('document_by_cc_pair')
    .where('cc_pair_id', '=', pairId)
    .where('document_id', '=', (eb) => eb.fn.any(eb.val(ids)))
    .execute();
  const orphans = await db
    .selectFrom('documents as d')
    .select('d.id')
    .where('d.id', '=', (eb) => eb.fn.any(eb.val(ids)))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('document_by_cc_pair as o')
            .select('o.document_id')
            .whereRef('o.document_id', '=', 'd.id'),
        ),
      ),
    )
    .execute();
  return orphans.map((r) => r.id);
}

export async function setRetryAfter(db: DbExecutor, pairId: number, at: Date): Promise<void> {
  await db.updateTable('cc_pairs').set({ retry_after: at }).where('id', '=', pairId).execute();
}

/**
 * Claims a pair whose prune interval passed (its `last_pruned` is set now, so another worker does not
 * prune it too): active, indexed at least once, no attempt running, not among `busyPairIds`.
 */
export async function claimDuePrune(db: DbExecutor, busyPairIds: number[]): Promise<number | undefined> {
  const row = await db
    .updateTable('cc_pairs')
    .set({ last_pruned: now() })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('cc_pairs as p')
        .innerJoin('connectors as c', 'c.id', 'p.connector_id')
        .select('p.id')
        .where('p.is_system', '=', false)
        .where('c.prune_freq', 'is not', null)
        .where('p.status', '=', 'active')
        .where('p.last_successful_index_time', 'is not', null)
        .where((eb) =>
          eb.or([
            eb('p.last_pruned', 'is', null),
            eb('p.last_pruned', '<', secondsAgo(eb.ref('c.prune_freq'))),
          ]),
        )
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('index_attempts as a')
                .select('a.id')
                .whereRef('a.cc_pair_id', '=', 'p.id')
                .where('a.status', '=', 'in_progress'),
            ),
          ),
        )
        .$if(busyPairIds.length > 0, (qb) => qb.where('p.id', 'not in', busyPairIds))
        .orderBy('p.last_pruned', (ob) => ob.asc().nullsFirst())
        .orderBy('p.id')
        .forUpdate('p')
        .skipLocked()
        .limit(1),
    )
    .returning('id')
    .executeTakeFirst();
  return row?.id;
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
  /** Only the documents whose id starts with this (a container of the source: a repository, a channel). */
  idPrefix?: string,
): Promise<string[]> {
  const principals = [...new Set(access.principals)].sort();
  let query = db
    .updateTable('documents as d')
    .from('document_by_cc_pair as o')
    .set({ access_external: principals, external_public: access.is_public, content_hash: '' })
    .whereRef('o.document_id', '=', 'd.id')
    .where('o.cc_pair_id', '=', pairId)
    .where((eb) =>
      eb.or([
        eb('d.access_external', 'is distinct from', eb.val(principals)),
        eb('d.external_public', '<>', access.is_public),
      ]),
    );
  if (documentIds !== null) query = query.where('d.id', '=', (eb) => eb.fn.any(eb.val(documentIds)));
  if (idPrefix !== undefined)
    query = query.where((eb) => eb.fn<boolean>('starts_with', ['d.id', eb.val(idPrefix)]));
  const rows = await query.returning('d.id').execute();
  return rows.map((r) => r.id);
}
