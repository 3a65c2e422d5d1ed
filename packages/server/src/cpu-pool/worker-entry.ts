import { AppError } from '../errors.ts';
import { TASKS, type TaskName } from './tasks.ts';

/** What a task sends back: its value, or the `AppError` it refused the input with (an Error's class does not cross threads). */
export type TaskResult =
  | { ok: true; value: unknown }
  | { ok: false; error_code: AppError['error_code']; detail: string };

/** The function piscina calls in each worker thread. */
export default async function runTask(message: { task: TaskName; input: never }): Promise<TaskResult> {
  try {
    return { ok: true, value: await TASKS[message.task](message.input) };
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error_code: error.error_code, detail: error.detail };
    throw error;
  }
}
