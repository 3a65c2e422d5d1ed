import type { AppDeps } from '../context.ts';
import * as maintenanceRepository from './maintenance.repository.ts';
import type { WorkerTask } from './task.ts';

export interface Worker {
  /** Runs every task once now (tests and `kas worker --once`). */
  runOnce(): Promise<void>;
  stop(): Promise<void>;
}

/** Stable 31-bit advisory-lock key per task name. */
function lockKey(name: string): number {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) | 0;
  return hash & 0x7fffffff;
}

/**
 * Runs background tasks on their intervals. With a shared Postgres several workers may run: each task
 * run takes a transaction-scoped advisory lock, so one worker runs a given task at a time.
 */
export function startWorker(deps: AppDeps, tasks: WorkerTask[]): Worker {
  const controller = new AbortController();
  const running = new Set<Promise<void>>();
  const timers: NodeJS.Timeout[] = [];

  const runTask = async (task: WorkerTask) => {
    if (controller.signal.aborted) return;
    try {
      if (deps.dbKind === 'postgres' && task.exclusive !== false) {
        await deps.db.transaction().execute(async (trx) => {
          if (await maintenanceRepository.tryAdvisoryTransactionLock(trx, lockKey(task.name))) {
            await task.run(deps, controller.signal);
          }
        });
      } else {
        await task.run(deps, controller.signal);
      }
    } catch (error) {
      if (!controller.signal.aborted)
        deps.logger.error({ err: error, task: task.name }, 'worker task failed');
    }
  };
  const track = (task: WorkerTask) => {
    const promise = runTask(task).finally(() => running.delete(promise));
    running.add(promise);
    return promise;
  };

  for (const task of tasks) {
    const timer = setInterval(() => void track(task), task.intervalMs);
    timer.unref();
    timers.push(timer);
  }
  deps.logger.info({ tasks: tasks.map((t) => t.name) }, 'worker started');

  return {
    runOnce: async () => {
      await Promise.all(tasks.map(track));
    },
    stop: async () => {
      controller.abort();
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([...running]);
    },
  };
}
