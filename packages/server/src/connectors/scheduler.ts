import type { AppDeps } from '../context.ts';
import type { WorkerTask } from '../worker/task.ts';
import * as connectorsRepository from './connectors.repository.ts';
import * as connectorFilesRepository from './files.repository.ts';
import * as indexingRepository from './indexing.repository.ts';
import { type EventOptions, processQueuedEvents } from './service/events.ts';
import { processDeletion } from './service/pairs.ts';
import { type IndexingOptions, runAttempt, runPrune } from './service/run-attempt.ts';

export function indexingOptionsFrom(deps: AppDeps): IndexingOptions {
  return {
    heartbeatMs: deps.config.KAS_CONNECTOR_HEARTBEAT_MS,
    repeatedAfter: 3,
    backoffBaseMs: deps.config.KAS_CONNECTOR_BACKOFF_MS,
    files: { read: (id) => connectorFilesRepository.readConnectorFile(deps.db, id) },
    maxPages: deps.config.KAS_WEB_MAX_PAGES,
  };
}

/**
 * One scheduler pass: stale attempts go back to the queue, due pairs get an attempt, pairs being
 * deleted are (re)tried, then this process claims a pair whose `prune_freq` passed and attempts up
 * to its concurrency, and runs them.
 * Resolves when the attempts it started have finished or been handed back.
 */
export async function schedulerPass(
  deps: AppDeps,
  signal: AbortSignal,
  options = indexingOptionsFrom(deps),
): Promise<void> {
  const state = deps.indexing;
  const started: Promise<void>[] = [];
  if (!state.ticking) {
    state.ticking = true;
    try {
      const requeued = await indexingRepository.requeueStaleAttempts(
        deps.db,
        deps.config.KAS_CONNECTOR_STALE_MS,
      );
      if (requeued.length)
        deps.logger.warn({ index_attempt_ids: requeued }, 'resuming attempts whose worker stopped');
      await indexingRepository.queueDueAttempts(deps.db);
      if (!state.running.size) {
        for (const pairId of await connectorsRepository.pairsInDeletion(deps.db)) {
          await processDeletion({ ctx: deps, pairId });
        }
      }
    } finally {
      state.ticking = false;
    }
  }
  // A due prune takes a slot before queued attempts, so retries of failing pairs cannot starve it.
  if (!signal.aborted && state.running.size < deps.config.KAS_CONNECTOR_CONCURRENCY) {
    const busy = [...state.running.values()].map((r) => r.pairId);
    const pairId = await indexingRepository.claimDuePrune(deps.db, busy);
    if (pairId !== undefined) started.push(runPrune(deps, pairId, options, signal));
  }
  while (!signal.aborted && state.running.size < deps.config.KAS_CONNECTOR_CONCURRENCY) {
    const busy = [...state.running.values()].map((r) => r.pairId);
    const attempt = await indexingRepository.claimAttempt(deps.db, state.workerId, busy);
    if (!attempt) break;
    started.push(runAttempt(deps, attempt, options, signal));
  }
  await Promise.all(started);
}

/** The connector scheduler and indexer as a worker task; not exclusive, so several workers share the queue. */
export const connectorIndexingTask: WorkerTask = {
  name: 'connector-indexing',
  intervalMs: 1000,
  exclusive: false,
  run: (deps, signal) => schedulerPass(deps, signal),
};

export function eventOptionsFrom(deps: AppDeps): EventOptions {
  return {
    heartbeatMs: deps.config.KAS_CONNECTOR_HEARTBEAT_MS,
    staleMs: deps.config.KAS_CONNECTOR_STALE_MS,
    backoffBaseMs: deps.config.KAS_CONNECTOR_BACKOFF_MS,
    maxTries: deps.config.KAS_CONNECTOR_EVENT_TRIES,
  };
}

/** One pass over queued webhook events: processes every due one (see `processQueuedEvents`). */
export function eventPass(
  deps: AppDeps,
  signal: AbortSignal,
  options = eventOptionsFrom(deps),
): Promise<number> {
  return processQueuedEvents(deps, signal, options);
}

/** Queued webhook events as a worker task, apart from index attempts so a long crawl never delays them. */
export const connectorEventsTask: WorkerTask = {
  name: 'connector-events',
  intervalMs: 500,
  exclusive: false,
  run: async (deps, signal) => {
    await eventPass(deps, signal);
  },
};

/** Uploads no `file` connector references, older than `KAS_CONNECTOR_UPLOAD_GRACE_HOURS`, are removed. */
export async function cleanUpUploads(deps: AppDeps): Promise<number> {
  const removed = await connectorFilesRepository.deleteUnreferencedFiles(deps.db, {
    olderThanHours: deps.config.KAS_CONNECTOR_UPLOAD_GRACE_HOURS,
  });
  if (removed) deps.logger.info({ removed }, 'unused connector uploads removed');
  return removed;
}

export const connectorUploadsCleanupTask: WorkerTask = {
  name: 'connector-uploads-cleanup',
  intervalMs: 15 * 60_000,
  run: async (deps) => {
    await cleanUpUploads(deps);
  },
};
