import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { AppError } from '../errors.ts';
import type { TaskInput, TaskName, TaskOutput } from './tasks.ts';
import { TASK_STARTED, type TaskResult } from './worker-entry.ts';

export interface CpuPoolOptions {
  /** Worker threads; 0 picks one fewer than the machine's cores (at least one). */
  threads: number;
  /** Heap of one worker thread (MB); a task that needs more is refused, the thread is replaced. */
  memoryMb: number;
  /** Longest time one task may run (ms); a task waits at most as long again for a free thread. */
  timeoutMs: number;
  /** How much lower the threads' scheduling priority is than the main thread's (Linux nice; default 10). */
  niceIncrement?: number;
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
    niceIncrement: options.niceIncrement ?? 10,
  });
  // A task's time limit starts when a thread takes it up (the worker says so), not while it waits its
  // turn: under load a document may queue behind others without being refused for their work.
  const started = new Map<number, () => void>();
  pool.on('message', (message: unknown) => {
    const id = (message as { [TASK_STARTED]?: unknown } | null)?.[TASK_STARTED];
    if (typeof id === 'number') started.get(id)?.();
  });
  let lastId = 0;
  return {
    async run(task, input, runOptions = {}) {
      const id = ++lastId;
      const limit = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      let running = false;
      started.set(id, () => {
        running = true;
        timer = setTimeout(() => limit.abort(), options.timeoutMs);
      });
      // Waiting for a thread is bounded too: a server this busy says so rather than queueing forever.
      const queued = setTimeout(() => {
        if (!running) limit.abort();
      }, options.timeoutMs);
      const signal = AbortSignal.any([limit.signal, ...(runOptions.signal ? [runOptions.signal] : [])]);
      const subject = runOptions.subject ?? 'the input';
      let result: TaskResult;
      try {
        result = (await pool.run(
          { task, input, id },
          { signal, ...(runOptions.transfer ? { transferList: runOptions.transfer } : {}) },
        )) as TaskResult;
      } catch (error) {
        if (runOptions.signal?.aborted) throw error;
        if (limit.signal.aborted && !running)
          throw new AppError(
            'SERVICE_UNAVAILABLE',
            `The server is busy: reading ${subject} waited more than ${Math.round(options.timeoutMs / 1000)} s for a free worker thread; try again later`,
            { cause: error },
          );
        if (limit.signal.aborted)
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
      } finally {
        clearTimeout(timer);
        clearTimeout(queued);
        started.delete(id);
      }
      if (!result.ok) throw new AppError(result.error_code, result.detail);
      return result.value as TaskOutput<typeof task>;
    },
    close: () => pool.destroy(),
  };
}
