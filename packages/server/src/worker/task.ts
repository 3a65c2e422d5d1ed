import type { AppDeps } from '../context.ts';

/** A periodic background task. Tasks must be idempotent: a crash mid-run is retried next interval. */
export interface WorkerTask {
  name: string;
  intervalMs: number;
  /** Default true: one worker at a time runs it (advisory lock). False: every worker runs it (the task coordinates itself). */
  exclusive?: boolean;
  run(deps: AppDeps, signal: AbortSignal): Promise<void>;
}
