import { type Kysely, sql } from 'kysely';

/** Files uploaded for `file` connectors, stored as they came (text is extracted when the connector runs). */
export async function up(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      `CREATE TABLE connector_files (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        content_type text NOT NULL,
        data bytea NOT NULL,
        uploaded_by text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
    )
    .execute(db);
}
