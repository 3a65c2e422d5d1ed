import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';

/** Deletes rate-limit windows (rate-limiter-flexible's Postgres store) that expired before `now` (ms). */
export async function deleteExpiredRateLimits(db: DbExecutor, now: number): Promise<void> {
  await sql`DELETE FROM rate_limits WHERE expire IS NOT NULL AND expire < ${now}`.execute(db);
}
