import { sql } from 'kysely';
import type pg from 'pg';
import type { Db } from '../db/database.ts';

/**
 * The statements behind the Postgres auth cache's invalidation (auth/pg-auth-cache.ts). A listener
 * acknowledges an epoch by renaming its own connection (`application_name` = `kas-auth:<epoch>`): the
 * name is visible at once in `pg_stat_activity`, so writers learn the live listeners and how far each
 * has got without a table, and a listener whose process dies disappears with its connection.
 */
export const CHANNEL = 'kas_auth';
export const BLOCK_CHANNEL = 'kas_auth_block';
export const LISTENER_PREFIX = 'kas-auth:';

export async function listen(client: pg.Client): Promise<number> {
  await client.query(`LISTEN ${CHANNEL}`);
  await client.query(`LISTEN ${BLOCK_CHANNEL}`);
  const { rows } = await client.query<{ epoch: string }>(
    `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS epoch FROM kas_auth_epoch`,
  );
  return Number(rows[0]!.epoch);
}

export async function acknowledge(client: pg.Client, epoch: number): Promise<void> {
  await client.query(`SELECT set_config('application_name', $1, false)`, [`${LISTENER_PREFIX}${epoch}`]);
}

export async function heartbeat(client: pg.Client): Promise<void> {
  await client.query('SELECT 1');
}

/** Addresses over the failed-authentication limit now, with the instant their window ends. */
export async function blockedAddresses(
  client: pg.Client,
  limit: number,
): Promise<{ address: string; until: number }[]> {
  const { rows } = await client.query<{ key: string; expire: string }>(
    `SELECT key, expire FROM rate_limits WHERE key LIKE 'authfail:%' AND points >= $1 AND expire > $2`,
    [limit, Date.now()],
  );
  return rows.map((row) => ({ address: row.key.slice('authfail:'.length), until: Number(row.expire) }));
}

/** Publishes a new epoch (delivered to every listener, this process's included); returns it. */
export async function publishEpoch(db: Db): Promise<number> {
  // Raw SQL: NOTIFY (pg_notify) of a sequence's next value in one statement.
  const { rows } = await sql<{ epoch: string }>`
    SELECT e.epoch FROM (SELECT nextval('kas_auth_epoch') AS epoch) e,
      LATERAL (SELECT pg_notify(${CHANNEL}, e.epoch::text)) n`.execute(db);
  return Number(rows[0]!.epoch);
}

export async function publishBlock(db: Db, address: string, until: number): Promise<void> {
  // Raw SQL: NOTIFY (pg_notify), not a table.
  await sql`SELECT pg_notify(${BLOCK_CHANNEL}, ${`${until} ${address}`})`.execute(db);
}

/** Every live listener's backend and the epoch it has acknowledged. */
export async function listeners(db: Db): Promise<{ pid: number; epoch: number }[]> {
  // Raw SQL: pg_stat_activity is a system view, which no table type declares.
  const { rows } = await sql<{ pid: number; application_name: string }>`
    SELECT pid, application_name FROM pg_stat_activity
    WHERE application_name LIKE ${`${LISTENER_PREFIX}%`}`.execute(db);
  return rows.map((row) => ({
    pid: row.pid,
    epoch: Number(row.application_name.slice(LISTENER_PREFIX.length)),
  }));
}

export async function terminate(db: Db, pids: number[]): Promise<void> {
  // Raw SQL: a server function over unnest(array), no table.
  await sql`SELECT pg_terminate_backend(pid) FROM unnest(${pids}::int[]) AS pid`.execute(db);
}
