import { parentPort } from 'node:worker_threads';
import { AppError } from '../errors.ts';
import { TASKS, type TaskName } from './tasks.ts';

/** What a task sends back: its value, or the `AppError` it refused the input with (an Error's class does not cross threads). */
export type TaskResult =
  | { ok: true; value: unknown }
  | { ok: false; error_code: AppError['error_code']; detail: string };

/** The message a worker sends when it takes up a task: its time limit starts then (`cpu-pool.ts`). */
export const TASK_STARTED = 'kasTaskStarted';

/** The function piscina calls in each worker thread. */
export default async function runTask(message: {
  task: TaskName;
  input: never;
  id: number;
}): Promise<TaskResult> {
  parentPort?.postMessage({ [TASK_STARTED]: message.id });
  try {
    return { ok: true, value: await TASKS[message.task](message.input) };
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error_code: error.error_code, detail: error.detail };
    throw error;
  }
}
