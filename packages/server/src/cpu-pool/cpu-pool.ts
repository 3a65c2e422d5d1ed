import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { AppError } from '../errors.ts';
import type { TaskInput, TaskName, TaskOutput } from './tasks.ts';
import type { TaskResult } from './worker-entry.ts';

export interface CpuPoolOptions {
  /** Worker threads; 0 picks one fewer than the machine's cores (at least one). */
  threads: number;
  /** Heap of one worker thread (MB); a task that needs more is refused, the thread is replaced. */
  memoryMb: number;
  /** Longest time one task may take, waiting in the queue included (ms). */
  timeoutMs: number;
}

export interface RunOptions {
  /** Buffers moved to the worker rather than copied (the caller must not use them afterwards). */
  transfer?: ArrayBuffer[];
  /** Stops the task (its thread is terminated) when the caller no longer needs the result. */
  signal?: AbortSignal;
  /** What the refusal calls the input, e.g. `"report.pdf"`. */
  subject?: string;
}

/**
 * The one place CPU-heavy work runs: a pool of worker threads (piscina), so that parsing a hostile
 * file or chunking a huge document never holds the event loop that answers everyone else. Each task
 * is bounded in memory (the thread's heap) and time (the thread is terminated); both refusals are a
 * 413 naming the limit. The threads run at a lower scheduling priority than the main thread.
 */
export interface CpuPool {
  run<N extends TaskName>(task: N, input: TaskInput<N>, options?: RunOptions): Promise<TaskOutput<N>>;
  close(): Promise<void>;
}

export function defaultThreads(): number {
  return Math.max(1, availableParallelism() - 1);
}

export function createCpuPool(options: CpuPoolOptions): CpuPool {
  const pool = new Piscina({
    filename: new URL('./worker-entry.ts', import.meta.url).href,
    minThreads: 0,
    maxThreads: options.threads || defaultThreads(),
    // Idle threads exit, so an idle server holds no parser heaps.
    idleTimeout: 30_000,
    resourceLimits: { maxOldGenerationSizeMb: options.memoryMb, maxYoungGenerationSizeMb: 32 },
    // Linux: the main thread (health, search, chat) wins the CPU when both want it.
    niceIncrement: 10,
  });
  return {
    async run(task, input, runOptions = {}) {
      const signals = [
        AbortSignal.timeout(options.timeoutMs),
        ...(runOptions.signal ? [runOptions.signal] : []),
      ];
      const signal = AbortSignal.any(signals);
      const subject = runOptions.subject ?? 'the input';
      let result: TaskResult;
      try {
        result = (await pool.run(
          { task, input },
          { signal, ...(runOptions.transfer ? { transferList: runOptions.transfer } : {}) },
        )) as TaskResult;
      } catch (error) {
        if (runOptions.signal?.aborted) throw error;
        if (signal.aborted)
          throw new AppError(
            'PAYLOAD_TOO_LARGE',
            `Reading ${subject} took longer than the limit of ${Math.round(options.timeoutMs / 1000)} s (KAS_WORKER_TIMEOUT_MS)`,
            { cause: error },
          );
        if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY')
          throw new AppError(
            'PAYLOAD_TOO_LARGE',
            `Reading ${subject} needs more than the limit of ${options.memoryMb} MB of memory (KAS_WORKER_MEMORY_MB)`,
            { cause: error },
          );
        throw error;
      }
      if (!result.ok) throw new AppError(result.error_code, result.detail);
      return result.value as TaskOutput<typeof task>;
    },
    close: () => pool.destroy(),
  };
}
