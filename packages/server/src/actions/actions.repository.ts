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
  'tools.group_scoped',
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

/** Every user's token for a configuration (its token endpoint moved: they connect again). */
export async function deleteUserTokensOf(db: DbExecutor, configId: number): Promise<void> {
  await db.deleteFrom('oauth_user_tokens').where('oauth_config_id', '=', configId).execute();
}

export async function deleteUserToken(db: DbExecutor, configId: number, userId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('oauth_user_tokens')
    .where('oauth_config_id', '=', configId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}

export function insertMcpServer(db: DbExecutor, row: Insertable<Database['mcp_servers']>) {
  return db.insertInto('mcp_servers').values(row).returning('id').executeTakeFirstOrThrow();
}

export function findMcpServer(db: DbExecutor, id: number) {
  return db.selectFrom('mcp_servers').selectAll().where('id', '=', id).executeTakeFirst();
}

export type McpServerRow = NonNullable<Awaited<ReturnType<typeof findMcpServer>>>;

export function listMcpServers(db: DbExecutor) {
  return db.selectFrom('mcp_servers').selectAll().orderBy('id').execute();
}

export async function updateMcpServer(
  db: DbExecutor,
  id: number,
  patch: Updateable<Database['mcp_servers']>,
) {
  await db
    .updateTable('mcp_servers')
    .set({ ...patch, updated_at: new Date().toISOString() })
    .where('id', '=', id)
    .execute();
}

/** Deletes the server; its tool rows, their agent links and every user's config cascade. */
export async function deleteMcpServer(db: DbExecutor, id: number): Promise<boolean> {
  const r = await db.deleteFrom('mcp_servers').where('id', '=', id).executeTakeFirst();
  return r.numDeletedRows > 0n;
}

export function listServerTools(db: DbExecutor, serverId: number) {
  return db
    .selectFrom('tools')
    .select(['id', 'name', 'description', 'enabled', 'mcp_input_schema'])
    .where('mcp_server_id', '=', serverId)
    .orderBy('id')
    .execute();
}

export async function insertServerTool(
  db: DbExecutor,
  row: { mcp_server_id: number; name: string; description: string; input_schema: Record<string, unknown> },
) {
  await db
    .insertInto('tools')
    .values({
      name: row.name,
      display_name: row.name,
      description: row.description,
      kind: 'mcp',
      in_code_tool_id: null,
      mcp_server_id: row.mcp_server_id,
      mcp_input_schema: JSON.stringify(row.input_schema),
    })
    .execute();
}

export async function updateServerTool(
  db: DbExecutor,
  id: number,
  row: { description: string; input_schema: Record<string, unknown> },
) {
  await db
    .updateTable('tools')
    .set({ description: row.description, mcp_input_schema: JSON.stringify(row.input_schema) })
    .where('id', '=', id)
    .execute();
}

export async function deleteToolsById(db: DbExecutor, ids: number[]) {
  if (ids.length) await db.deleteFrom('tools').where('id', 'in', ids).execute();
}

export async function setServerToolsEnabled(db: DbExecutor, serverId: number, selected: string[]) {
  await db.updateTable('tools').set({ enabled: false }).where('mcp_server_id', '=', serverId).execute();
  if (selected.length)
    await db
      .updateTable('tools')
      .set({ enabled: true })
      .where('mcp_server_id', '=', serverId)
      .where('name', 'in', selected)
      .execute();
}

export function countServerTools(db: DbExecutor, serverId: number) {
  return db
    .selectFrom('tools')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('mcp_server_id', '=', serverId)
    .executeTakeFirstOrThrow();
}

export function findMcpUserConfig(db: DbExecutor, serverId: number, userId: string) {
  return db
    .selectFrom('mcp_user_configs')
    .selectAll()
    .where('mcp_server_id', '=', serverId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export function userConfigServerIds(db: DbExecutor, userId: string) {
  return db.selectFrom('mcp_user_configs').select('mcp_server_id').where('user_id', '=', userId).execute();
}

export async function upsertMcpUserConfig(
  db: DbExecutor,
  serverId: number,
  userId: string,
  configEnc: string,
) {
  await db
    .insertInto('mcp_user_configs')
    .values({ mcp_server_id: serverId, user_id: userId, config_enc: configEnc })
    .onConflict((oc) =>
      oc
        .columns(['mcp_server_id', 'user_id'])
        .doUpdateSet({ config_enc: configEnc, updated_at: new Date().toISOString() }),
    )
    .execute();
}

export async function deleteMcpUserConfig(
  db: DbExecutor,
  serverId: number,
  userId: string,
): Promise<boolean> {
  const r = await db
    .deleteFrom('mcp_user_configs')
    .where('mcp_server_id', '=', serverId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}

export function insertOauthConfig(db: DbExecutor, row: Insertable<Database['oauth_configs']>) {
  return db.insertInto('oauth_configs').values(row).returning('id').executeTakeFirstOrThrow();
}

export function listOauthConfigs(db: DbExecutor) {
  return db
    .selectFrom('oauth_configs')
    .selectAll('oauth_configs')
    .select((eb) =>
      eb
        .selectFrom('tools')
        .select((e) => e.fn.countAll<string>().as('n'))
        .whereRef('tools.oauth_config_id', '=', 'oauth_configs.id')
        .as('tool_count'),
    )
    .orderBy('id')
    .execute();
}

export async function updateOauthConfig(
  db: DbExecutor,
  id: number,
  patch: Updateable<Database['oauth_configs']>,
) {
  await db
    .updateTable('oauth_configs')
    .set({ ...patch, updated_at: new Date().toISOString() })
    .where('id', '=', id)
    .execute();
}

export async function deleteOauthConfig(db: DbExecutor, id: number): Promise<boolean> {
  const r = await db.deleteFrom('oauth_configs').where('id', '=', id).executeTakeFirst();
  return r.numDeletedRows > 0n;
}

export async function insertOauthState(db: DbExecutor, row: Insertable<Database['oauth_states']>) {
  await db.deleteFrom('oauth_states').where('expires_at', '<', new Date()).execute();
  await db.insertInto('oauth_states').values(row).execute();
}

/** Takes a state once: a replayed callback finds nothing. */
export function takeOauthState(db: DbExecutor, state: string) {
  return db.deleteFrom('oauth_states').where('state', '=', state).returningAll().executeTakeFirst();
}

/** The groups of each OpenAPI action among `toolIds`. */
export function groupsOfTools(db: DbExecutor, toolIds: readonly number[]) {
  if (toolIds.length === 0) return Promise.resolve([] as { tool_id: number; group_id: number }[]);
  return db
    .selectFrom('tool_groups')
    .select(['tool_id', 'group_id'])
    .where('tool_id', 'in', toolIds)
    .execute();
}

export async function replaceToolGroups(db: DbExecutor, toolId: number, groupIds: readonly number[]) {
  await db.deleteFrom('tool_groups').where('tool_id', '=', toolId).execute();
  if (groupIds.length)
    await db
      .insertInto('tool_groups')
      .values(groupIds.map((group_id) => ({ tool_id: toolId, group_id })))
      .execute();
}

/** The groups of each MCP server among `serverIds`. */
export function groupsOfMcpServers(db: DbExecutor, serverIds: readonly number[]) {
  if (serverIds.length === 0) return Promise.resolve([] as { mcp_server_id: number; group_id: number }[]);
  return db
    .selectFrom('mcp_server_groups')
    .select(['mcp_server_id', 'group_id'])
    .where('mcp_server_id', 'in', serverIds)
    .execute();
}

export async function replaceMcpServerGroups(db: DbExecutor, serverId: number, groupIds: readonly number[]) {
  await db.deleteFrom('mcp_server_groups').where('mcp_server_id', '=', serverId).execute();
  if (groupIds.length)
    await db
      .insertInto('mcp_server_groups')
      .values(groupIds.map((group_id) => ({ mcp_server_id: serverId, group_id })))
      .execute();
}
