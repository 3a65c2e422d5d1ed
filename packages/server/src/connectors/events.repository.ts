import type { DbExecutor } from '../db/database.ts';
import { now, secondsAgo } from './connectors.repository.ts';
import type { ConnectorEvent, NewConnectorEvent } from './connectors.table.ts';

/** A claimed event, as the worker processes it. */
export type EventRow = Pick<ConnectorEvent, 'id' | 'cc_pair_id' | 'refs' | 'status' | 'tries' | 'error_msg'>;

/**
 * Stores verified webhook deliveries, one per pair, to be processed by a worker. A delivery whose
 * source id the pair already has (a redelivery) is not stored again; answers the new rows' ids.
 */
export async function insertEvents(
  db: DbExecutor,
  rows: (Pick<NewConnectorEvent, 'cc_pair_id' | 'delivery_id'> & { refs: unknown[] })[],
): Promise<number[]> {
  const ids: number[] = [];
  for (const row of rows) {
    const inserted = await db
      .insertInto('connector_events')
      .values({ cc_pair_id: row.cc_pair_id, refs: JSON.stringify(row.refs), delivery_id: row.delivery_id })
      .onConflict((oc) =>
        oc.columns(['cc_pair_id', 'delivery_id']).where('delivery_id', 'is not', null).doNothing(),
      )
      .returning('id')
      .executeTakeFirst();
    if (inserted) ids.push(inserted.id);
  }
  return ids;
}

/** Events whose worker stopped sending heartbeats go back to the queue (their work is idempotent). */
export async function requeueStaleEvents(db: DbExecutor, staleMs: number): Promise<number[]> {
  const rows = await db
    .updateTable('connector_events')
    .set({ status: 'queued', worker_id: null, time_updated: now() })
    .where('status', '=', 'in_progress')
    .where('heartbeat_at', '<', secondsAgo(staleMs / 1000))
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Claims the oldest due event of a pair that is not paused or being deleted, for this worker only
 * (`FOR UPDATE SKIP LOCKED`: two workers never claim the same event).
 */
export function claimEvent(db: DbExecutor, workerId: string): Promise<EventRow | undefined> {
  return db
    .updateTable('connector_events')
    .set((eb) => ({
      status: 'in_progress',
      worker_id: workerId,
      heartbeat_at: now(),
      tries: eb('tries', '+', 1),
      time_updated: now(),
    }))
    .where('id', '=', (eb) =>
      eb
        .selectFrom('connector_events as e')
        .innerJoin('cc_pairs as p', 'p.id', 'e.cc_pair_id')
        .select('e.id')
        .where('e.status', '=', 'queued')
        .where('e.next_try_at', '<=', now())
        .where('p.status', 'not in', ['paused', 'deleting'])
        .orderBy('e.id')
        .forUpdate('e')
        .skipLocked()
        .limit(1),
    )
    .returning(['id', 'cc_pair_id', 'refs', 'status', 'tries', 'error_msg'])
    .executeTakeFirst();
}

export async function heartbeatEvent(db: DbExecutor, id: number, workerId: string): Promise<boolean> {
  const row = await db
    .updateTable('connector_events')
    .set({ heartbeat_at: now() })
    .where('id', '=', id)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Marks a claimed event processed; false when it is no longer this worker's (it was requeued). */
export async function finishEvent(
  db: DbExecutor,
  id: number,
  workerId: string,
  counts: { indexed: number; removed: number },
): Promise<boolean> {
  const row = await db
    .updateTable('connector_events')
    .set({
      status: 'done',
      error_msg: null,
      documents_indexed: counts.indexed,
      documents_removed: counts.removed,
      worker_id: null,
      time_updated: now(),
    })
    .where('id', '=', id)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** A failed try: queued again at `retryAt`, or `failed` for good when `retryAt` is null. */
export async function failEvent(
  db: DbExecutor,
  id: number,
  workerId: string,
  failure: { error: string; retryAt: Date | null },
): Promise<void> {
  await db
    .updateTable('connector_events')
    .set({
      status: failure.retryAt ? 'queued' : 'failed',
      ...(failure.retryAt ? { next_try_at: failure.retryAt } : {}),
      error_msg: failure.error,
      worker_id: null,
      time_updated: now(),
    })
    .where('id', '=', id)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .execute();
}

/** Hands a claimed event back untried (worker stopping, pair paused): the try is not counted. */
export async function releaseEvent(db: DbExecutor, id: number, workerId: string): Promise<void> {
  await db
    .updateTable('connector_events')
    .set((eb) => ({
      status: 'queued',
      tries: eb.fn('greatest', [eb('tries', '-', 1), eb.lit(0)]),
      worker_id: null,
      time_updated: now(),
    }))
    .where('id', '=', id)
    .where('worker_id', '=', workerId)
    .where('status', '=', 'in_progress')
    .execute();
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
  const counts = await db
    .selectFrom('connector_events')
    .select((eb) => [
      'cc_pair_id',
      eb.fn.countAll<number>().filterWhere('status', 'in', ['queued', 'in_progress']).as('pending'),
      eb.fn.countAll<number>().filterWhere('status', '=', 'failed').as('failed'),
      eb.fn.max('time_updated').filterWhere('status', '=', 'done').as('last_processed'),
    ])
    .where('cc_pair_id', '=', (eb) => eb.fn.any(eb.val(ids)))
    .groupBy('cc_pair_id')
    .execute();
  for (const row of counts) {
    const summary = summaries.get(row.cc_pair_id);
    if (!summary) continue;
    summary.pending = row.pending;
    summary.failed = row.failed;
    summary.last_processed = row.last_processed ?? null;
  }
  const errors = await db
    .selectFrom('connector_events')
    .distinctOn('cc_pair_id')
    .select(['cc_pair_id', 'error_msg'])
    .where('cc_pair_id', '=', (eb) => eb.fn.any(eb.val(ids)))
    .where('error_msg', 'is not', null)
    .orderBy('cc_pair_id')
    .orderBy('time_updated', 'desc')
    .orderBy('id', 'desc')
    .execute();
  for (const row of errors) {
    const summary = summaries.get(row.cc_pair_id);
    if (summary) summary.last_error = row.error_msg;
  }
  return summaries;
}

/** Processed events older than a day and failed ones older than a week are forgotten. */
export async function purgeOldEvents(db: DbExecutor): Promise<void> {
  await db
    .deleteFrom('connector_events')
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'done'), eb('time_updated', '<', secondsAgo(24 * 3600))]),
        eb.and([eb('status', '=', 'failed'), eb('time_updated', '<', secondsAgo(7 * 24 * 3600))]),
      ]),
    )
    .execute();
}
