import type { Kysely } from 'kysely';

/** The key-value table of the first migration was never used. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('kv_store').ifExists().execute();
}
