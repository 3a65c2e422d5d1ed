import { type Kysely, sql } from 'kysely';

// A key's service account gets personal tokens only when an admin allows it on that key. Off (the
// default) refuses new tokens and stops the ones the key already minted from authenticating.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE api_keys ADD COLUMN allow_personal_tokens boolean NOT NULL DEFAULT false`.execute(db);
}
