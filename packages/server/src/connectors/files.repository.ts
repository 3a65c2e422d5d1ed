import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';

/** Stores one uploaded file for `file` connectors; answers its id. */
export async function insertConnectorFile(
  db: DbExecutor,
  row: { name: string; content_type: string; data: Uint8Array; uploaded_by: string | null },
): Promise<string> {
  const result = await sql<{ id: string }>`
    INSERT INTO connector_files (name, content_type, data, uploaded_by)
    VALUES (${row.name}, ${row.content_type}, ${Buffer.from(row.data)}, ${row.uploaded_by})
    RETURNING id`.execute(db);
  return (result.rows[0] as { id: string }).id;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function readConnectorFile(
  db: DbExecutor,
  id: string,
): Promise<{ name: string; content: Buffer; contentType: string | null } | null> {
  if (!UUID.test(id)) return null;
  const result = await sql<{ name: string; content_type: string; data: Uint8Array }>`
    SELECT name, content_type, data FROM connector_files WHERE id = ${id}`.execute(db);
  const row = result.rows[0];
  if (!row) return null;
  const data = row.data;
  return {
    name: row.name,
    contentType: row.content_type,
    content: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  };
}
