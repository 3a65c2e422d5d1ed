import { type Kysely, sql } from 'kysely';

// A document being written in stages (a large new document on the embedded database: its chunks in
// many short transactions, so that no statement holds the only connection for long) is `pending`:
// every reader skips it until one short transaction publishes it; one left by a crash is deleted at
// start-up.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE documents ADD COLUMN pending boolean NOT NULL DEFAULT false`.execute(db);
  await sql`CREATE INDEX documents_pending_idx ON documents (id) WHERE pending`.execute(db);
}
