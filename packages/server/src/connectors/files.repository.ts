import type { DbExecutor } from '../db/database.ts';
import { secondsAgo } from './connectors.repository.ts';
import type { NewConnectorFile } from './connectors.table.ts';

/** Stores one uploaded file for `file` connectors; answers its id. */
export async function insertConnectorFile(
  db: DbExecutor,
  row: Required<Omit<NewConnectorFile, 'id' | 'created_at'>>,
): Promise<string> {
  const { id } = await db
    .insertInto('connector_files')
    .values({ ...row, data: Buffer.from(row.data) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function readConnectorFile(
  db: DbExecutor,
  id: string,
): Promise<{ name: string; content: Buffer; contentType: string | null } | null> {
  if (!UUID.test(id)) return null;
  const row = await db
    .selectFrom('connector_files')
    .select(['name', 'content_type', 'data'])
    .where('id', '=', id)
    .executeTakeFirst();
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
  return db
    .selectFrom('connector_files')
    .select(['id', 'uploaded_by'])
    .where('id', '=', (eb) => eb.fn.any(eb.val(valid)))
    .execute();
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
  const base = db.deleteFrom('connector_files as f');
  let query: typeof base;
  if ('ids' in scope) {
    const ids = scope.ids.filter((id) => UUID.test(id));
    if (!ids.length) return 0;
    query = base.where('f.id', '=', (eb) => eb.fn.any(eb.val(ids)));
  } else {
    query = base.where('f.created_at', '<', secondsAgo(scope.olderThanHours * 3600));
  }
  const rows = await query
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('connectors as c')
            .select('c.id')
            .where('c.source', '=', 'file')
            .where(({ or, eb, ref, fn, cast }) =>
              or([
                eb(
                  ref('c.connector_specific_config', '->').key('file_locations'),
                  '@>',
                  fn('to_jsonb', [cast('f.id', 'text')]),
                ),
                eb(
                  ref('c.connector_specific_config', '->>').key('zip_metadata_file_id'),
                  '=',
                  cast('f.id', 'text'),
                ),
              ]),
            ),
        ),
      ),
    )
    .returning('f.id')
    .execute();
  return rows.length;
}
