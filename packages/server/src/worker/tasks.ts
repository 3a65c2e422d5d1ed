import {
  connectorEventsTask,
  connectorIndexingTask,
  connectorUploadsCleanupTask,
} from '../connectors/scheduler.ts';
import { embeddingBackfillTask } from '../search/backfill-task.ts';
import * as maintenanceRepository from './maintenance.repository.ts';
import type { WorkerTask } from './task.ts';

/** Expired per-key rate-limit windows (Postgres store) are deleted so the table stays small. */
export const purgeExpiredRateLimits: WorkerTask = {
  name: 'purge-expired-rate-limits',
  intervalMs: 5 * 60_000,
  async run(deps) {
    await maintenanceRepository.deleteExpiredRateLimits(deps.db, Date.now());
  },
};

/** Tables whose statistics the search index's own maintenance refreshes (search/postgres.ts). */
const SEARCH_TABLES = [
  'chunks',
  'search_terms',
  'search_term_deltas',
  'search_written_documents',
  'search_champions',
  'search_vocabulary',
];

/** Statistics per column (Postgres's default is 100): ANALYZE samples 300 × this many rows. */
const STATISTICS_TARGET = 10;

/**
 * The embedded database's autoanalyze. PGlite has no autovacuum, so the planner's statistics were
 * never refreshed after the migrations and tables grown since were planned as if nearly empty (the
 * soak: the chat-session listing sorted every session of the user instead of walking the index).
 * Like autovacuum, a table changed by more than 50 rows + 10 % since its last ANALYZE is analysed;
 * one table per run, its columns only, from a sample of 3,000 rows, so that a run's work is bounded
 * whatever the table's size (tens of ms; see maintenanceRepository.analyzeTable). Postgres's own
 * autovacuum does this in server mode.
 */
export const analyzeChangedTables: WorkerTask = {
  name: 'analyze-changed-tables',
  intervalMs: 30_000,
  async run(deps) {
    if (deps.dbKind !== 'pglite') return;
    const [table] = await maintenanceRepository.tablesToAnalyze(deps.db, {
      limit: 1,
      exclude: SEARCH_TABLES,
    });
    if (!table) return;
    const started = performance.now();
    await maintenanceRepository.analyzeTable(deps.db, table.table, STATISTICS_TARGET);
    deps.logger.debug(
      { table: table.table, changed: table.changed, ms: Math.round(performance.now() - started) },
      'table analysed',
    );
  },
};

/** Every background task of this process. Domains add theirs here. */
export const WORKER_TASKS: WorkerTask[] = [
  purgeExpiredRateLimits,
  analyzeChangedTables,
  connectorIndexingTask,
  connectorEventsTask,
  connectorUploadsCleanupTask,
  embeddingBackfillTask,
];
