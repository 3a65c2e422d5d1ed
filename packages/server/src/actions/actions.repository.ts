import type { Insertable, Updateable } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import type { Database } from '../db/schema.ts';

const toolDetailColumns = [
  'tools.id',
  'tools.name',
  'tools.display_name',
  'tools.description',
  'tools.kind',
  'tools.in_code_tool_id',
  'tools.mcp_server_id',
  'tools.enabled',
  'tools.openapi_schema',
  'tools.custom_headers_enc',
  'tools.passthrough_auth',
  'tools.oauth_config_id',
  'tools.mcp_input_schema',
] as const;

export function findTool(db: DbExecutor, id: number) {
  return db.selectFrom('tools').select(toolDetailColumns).where('tools.id', '=', id).executeTakeFirst();
}

export type ToolRow = NonNullable<Awaited<ReturnType<typeof findTool>>>;

/** The enabled tools among `ids` (what an agent may use). */
export function findEnabledTools(db: DbExecutor, ids: readonly number[]) {
  if (ids.length === 0) return Promise.resolve([] as ToolRow[]);
  return db
    .selectFrom('tools')
    .select(toolDetailColumns)
    .where('tools.id', 'in', ids)
    .where('tools.enabled', '=', true)
    .orderBy('tools.id')
    .execute();
}

export async function insertTool(db: DbExecutor, row: Insertable<Database['tools']>): Promise<number> {
  const { id } = await db.insertInto('tools').values(row).returning('id').executeTakeFirstOrThrow();
  return id;
}

export async function updateTool(db: DbExecutor, id: number, patch: Updateable<Database['tools']>) {
  await db
    .updateTable('tools')
    .set({ ...patch, updated_at: new Date().toISOString() })
    .where('id', '=', id)
    .execute();
}

export async function deleteTool(db: DbExecutor, id: number): Promise<boolean> {
  const result = await db.deleteFrom('tools').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function oauthConfigExists(db: DbExecutor, id: number): Promise<boolean> {
  return !!(await db.selectFrom('oauth_configs').select('id').where('id', '=', id).executeTakeFirst());
}
