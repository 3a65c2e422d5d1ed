/** What a statement's SQLSTATE says, from Postgres and PGlite alike. */

/** A unique constraint refused the write (SQLSTATE 23505, from Postgres and PGlite alike). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === '23505';
}

/** A lock that another transaction (or a replica's replay) holds, asked for `NOWAIT` or past `lock_timeout` (55P03). */
export function isLockNotAvailable(error: unknown): boolean {
  return (error as { code?: string })?.code === '55P03';
}

/**
 * Postgres chose this transaction as a deadlock's victim (40P01) or could not serialise it (40001):
 * nothing was written, and running it again is the documented remedy.
 */
export function isTransientConflict(error: unknown): boolean {
  const code = (error as { code?: string; cause?: { code?: string } })?.code;
  return code === '40P01' || code === '40001';
}
