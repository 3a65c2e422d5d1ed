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

/** Who uploaded each of `ids` that exists (ids that are not uploads' are left out). */
export async function findUploadOwners(
  db: DbExecutor,
  ids: readonly string[],
): Promise<{ id: string; uploaded_by: string | null }[]> {
  const valid = ids.filter((id) => UUID.test(id));
  if (!valid.length) return [];
  const result = await sql<{ id: string; uploaded_by: string | null }>`
    SELECT id::text AS id, uploaded_by FROM connector_files WHERE id = ANY(${valid}::uuid[])`.execute(db);
  return result.rows;
}

/** The uploads a `file` connector's configuration names (its `file_locations` and `zip_metadata_file_id`). */
export function filesOfConfig(config: unknown): string[] {
  const value = (config ?? {}) as { file_locations?: unknown; zip_metadata_file_id?: unknown };
  const ids = Array.isArray(value.file_locations)
    ? value.file_locations.filter((v) => typeof v === 'string')
    : [];
  if (typeof value.zip_metadata_file_id === 'string') ids.push(value.zip_metadata_file_id);
  return ids.filter((id) => UUID.test(id));
}

/**
 * Deletes uploads no `file` connector references: those among `ids` (a connector that named them is
 * gone) or, with `olderThanHours`, every upload older than that (uploaded but never, or no longer,
 * used). Answers the number deleted.
 */
export async function deleteUnreferencedFiles(
  db: DbExecutor,
  scope: { ids: string[] } | { olderThanHours: number },
): Promise<number> {
  const ids = 'ids' in scope ? scope.ids.filter((id) => UUID.test(id)) : null;
  if (ids && !ids.length) return 0;
  const hours = 'olderThanHours' in scope ? scope.olderThanHours : 0;
  const result = await sql<{ id: string }>`
    DELETE FROM connector_files f
    WHERE (${ids}::uuid[] IS NULL OR f.id = ANY(${ids}::uuid[]))
      AND (${ids}::uuid[] IS NOT NULL OR f.created_at < now() - make_interval(secs => ${hours * 3600}))
      AND NOT EXISTS (
        SELECT 1 FROM connectors c WHERE c.source = 'file' AND (
          c.connector_specific_config -> 'file_locations' @> to_jsonb(f.id::text)
          OR c.connector_specific_config ->> 'zip_metadata_file_id' = f.id::text))
    RETURNING f.id`.execute(db);
  return result.rows.length;
}
