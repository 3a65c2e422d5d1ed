import type { WorkerTask } from '../worker/task.ts';

/** Chunks embedded per batch, and how long one run keeps going while chunks remain. */
const BATCH = 256;
const RUN_BUDGET_MS = 20_000;

/**
 * Vectors for the chunks that have none: documents indexed before `KAS_EMBEDDING_BASE_URL` was set, or
 * while the endpoint was down. Runs in the background with progress in the log; nothing to do (and no
 * query) once a check found every chunk embedded, until an embedding fails again.
 */
export const embeddingBackfillTask: WorkerTask = {
  name: 'embedding-backfill',
  intervalMs: 30_000,
  async run(deps, signal) {
    if (!deps.search.backfillEmbeddings) return;
    const started = Date.now();
    let total = 0;
    while (!signal.aborted && Date.now() - started < RUN_BUDGET_MS) {
      const step = await deps.search.backfillEmbeddings(BATCH);
      if (!step) break;
      total += step.embedded;
      deps.logger.info(
        { embedded: total, remaining: step.remaining },
        step.remaining
          ? 'back-filling embeddings of chunks indexed without them'
          : 'every chunk has its embedding',
      );
      if (!step.remaining) break;
    }
  },
};
