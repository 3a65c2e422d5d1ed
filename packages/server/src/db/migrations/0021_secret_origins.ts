import { type Kysely, sql } from 'kysely';

// A credential's secrets are bound to the origins they were entered for (connectors/service/secret-origins.ts).
// Existing credentials start unbound with nobody as their enterer: they stay bound to where their CC pairs
// send them today, and an unlinked one is linked again only after its secrets are entered again.
const statements = [
  `ALTER TABLE credentials ADD COLUMN secret_origins jsonb`,
  `ALTER TABLE credentials ADD COLUMN secrets_entered_by uuid REFERENCES users(id) ON DELETE SET NULL`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
