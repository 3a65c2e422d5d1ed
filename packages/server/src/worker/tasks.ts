import {
  connectorEventsTask,
  connectorIndexingTask,
  connectorUploadsCleanupTask,
} from '../connectors/scheduler.ts';
import * as maintenanceRepository from './maintenance.repository.ts';
import type { WorkerTask } from './worker.ts';

/** Expired per-key rate-limit windows (Postgres store) are deleted so the table stays small. */
export const purgeExpiredRateLimits: WorkerTask = {
  name: 'purge-expired-rate-limits',
  intervalMs: 5 * 60_000,
  async run(deps) {
    await maintenanceRepository.deleteExpiredRateLimits(deps.db, Date.now());
  },
};

/** Every background task of this process. Domains add theirs here. */
export const WORKER_TASKS: WorkerTask[] = [
  purgeExpiredRateLimits,
  connectorIndexingTask,
  connectorEventsTask,
  connectorUploadsCleanupTask,
];
