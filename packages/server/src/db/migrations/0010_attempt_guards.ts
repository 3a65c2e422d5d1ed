import { type Kysely, sql } from 'kysely';

/** At most one open (queued or running) attempt per CC pair, even with several schedulers racing. */
export async function up(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      `CREATE UNIQUE INDEX index_attempts_one_open_idx ON index_attempts (cc_pair_id)
        WHERE status IN ('not_started', 'in_progress')`,
    )
    .execute(db);
}
