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

export function findOauthConfig(db: DbExecutor, id: number) {
  return db.selectFrom('oauth_configs').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserToken(db: DbExecutor, configId: number, userId: string) {
  return db
    .selectFrom('oauth_user_tokens')
    .selectAll()
    .where('oauth_config_id', '=', configId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export async function upsertUserToken(
  db: DbExecutor,
  row: { oauth_config_id: number; user_id: string; token_enc: string; expires_at: Date | null },
) {
  await db
    .insertInto('oauth_user_tokens')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['oauth_config_id', 'user_id']).doUpdateSet({
        token_enc: row.token_enc,
        expires_at: row.expires_at,
        updated_at: new Date().toISOString(),
      }),
    )
    .execute();
}

export async function deleteUserToken(db: DbExecutor, configId: number, userId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('oauth_user_tokens')
    .where('oauth_config_id', '=', configId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}
