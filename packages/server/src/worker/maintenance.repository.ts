import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';

/** Deletes rate-limit windows (rate-limiter-flexible's Postgres store) that expired before `now` (ms). */
export async function deleteExpiredRateLimits(db: DbExecutor, now: number): Promise<void> {
  await sql`DELETE FROM rate_limits WHERE expire IS NOT NULL AND expire < ${now}`.execute(db);
}

/** Takes a transaction-scoped advisory lock if free; false when another session holds it. */
export async function tryAdvisoryTransactionLock(trx: DbExecutor, key: number): Promise<boolean> {
  const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${key}) AS locked`.execute(
    trx,
  );
  return rows[0]?.locked === true;
}
