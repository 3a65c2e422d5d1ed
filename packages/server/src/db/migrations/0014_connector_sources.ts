import { type Kysely, sql } from 'kysely';

// Permission sync of connector sources: whether the source itself makes a document public (a Drive
// file shared with anyone, a Confluence space open to anonymous users), kept apart from the access the
// owning CC pairs give so that `recomputeAccess` can combine both.
const statements = [`ALTER TABLE documents ADD COLUMN external_public boolean NOT NULL DEFAULT false`];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
