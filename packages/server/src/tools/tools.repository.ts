import type { DbExecutor } from '../db/database.ts';

export const toolColumns = [
  'tools.id',
  'tools.name',
  'tools.display_name',
  'tools.description',
  'tools.kind',
  'tools.in_code_tool_id',
  'tools.mcp_server_id',
  'tools.enabled',
] as const;

export function listTools(db: DbExecutor) {
  return db
    .selectFrom('tools')
    .select(toolColumns)
    .where('tools.enabled', '=', true)
    .orderBy('tools.id')
    .execute();
}

/** The subset of `ids` that name existing tools. */
export async function findExistingToolIds(db: DbExecutor, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('tools').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}
