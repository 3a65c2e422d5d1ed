import { sql } from 'kysely';
import type { Db, DbExecutor } from '../db/database.ts';

/** Deletes rate-limit windows (rate-limiter-flexible's Postgres store) that expired before `now` (ms). */
export async function deleteExpiredRateLimits(db: DbExecutor, now: number): Promise<void> {
  // Raw SQL: rate_limits is rate-limiter-flexible's store, created by a migration but typed by no table file.
  await sql`DELETE FROM rate_limits WHERE expire IS NOT NULL AND expire < ${now}`.execute(db);
}

/** Takes a transaction-scoped advisory lock if free; false when another session holds it. */
export async function tryAdvisoryTransactionLock(trx: DbExecutor, key: number): Promise<boolean> {
  const row = await trx
    .selectNoFrom((eb) => eb.fn<boolean>('pg_try_advisory_xact_lock', [eb.val(key)]).as('locked'))
    .executeTakeFirst();
  return row?.locked === true;
}

/**
 * Tables changed by more than 50 rows + 10 % since they were last analysed (autovacuum's default
 * autoanalyze rule), except `exclude`: the longest unanalysed first (never analysed, then oldest), so a
 * busy table cannot starve the others (most changed first, the soak analysed chat_messages every run).
 */
export async function tablesToAnalyze(
  db: DbExecutor,
  args: { limit: number; exclude: string[] },
): Promise<{ table: string; changed: number }[]> {
  // Raw SQL: statistics views and catalogs (pg_stat_user_tables, pg_class), which no table type declares.
  const { rows } = await sql<{ table: string; changed: number }>`
    SELECT s.relname AS table, s.n_mod_since_analyze::float8 AS changed
    FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND s.relname <> ALL(${args.exclude}::text[])
      AND s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
    ORDER BY coalesce(greatest(s.last_analyze, s.last_autoanalyze), '-infinity') ASC, s.n_mod_since_analyze DESC,
      s.relname
    LIMIT ${args.limit}`.execute(db);
  return rows;
}

/**
 * Analyses a table's columns with a small sample (300 × `statisticsTarget` rows), so the work is
 * bounded whatever the table's size. The columns are named so that expression indexes are skipped:
 * a whole-table ANALYZE also evaluates their expressions on every sampled row (chat_messages'
 * `to_tsvector(message)`: 2.8 s for 40,000 messages on PGlite, against 35 ms for its columns).
 */
export async function analyzeTable(db: Db, table: string, statisticsTarget: number): Promise<void> {
  // Raw SQL: the pg_attribute catalog, set_config and ANALYZE, none of them the builder's.
  await db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ name: string }>`
      SELECT attname AS name FROM pg_attribute
      WHERE attrelid = ${table}::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`.execute(trx);
    if (!rows.length) return;
    await sql`SELECT set_config('default_statistics_target', ${String(statisticsTarget)}, true)`.execute(trx);
    await sql`ANALYZE ${sql.id(table)} (${sql.join(rows.map((r) => sql.id(r.name)))})`.execute(trx);
  });
}
