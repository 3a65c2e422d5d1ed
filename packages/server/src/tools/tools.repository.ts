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

/**
 * The enabled tools `viewer` may use: admins see all; others those of actions not scoped to user
 * groups, and of scoped ones (OpenAPI actions or MCP servers, migration 0015) in any of `memberOf`
 * (the rule `memberOfAny` of auth/scope.ts, applied in SQL so the list is filtered where it is read).
 */
export function listTools(db: DbExecutor, viewer: { isAdmin: boolean; memberOf: readonly number[] }) {
  const memberOf = [...viewer.memberOf];
  return db
    .selectFrom('tools')
    .select(toolColumns)
    .where('tools.enabled', '=', true)
    .$if(!viewer.isAdmin, (q) =>
      q.where((eb) =>
        eb.or([
          eb.and([
            eb('tools.group_scoped', '=', false),
            eb.or([
              eb('tools.mcp_server_id', 'is', null),
              eb.not(
                eb.exists(
                  eb
                    .selectFrom('mcp_servers')
                    .select('mcp_servers.id')
                    .whereRef('mcp_servers.id', '=', 'tools.mcp_server_id')
                    .where('mcp_servers.group_scoped', '=', true),
                ),
              ),
            ]),
          ]),
          eb.exists(
            eb
              .selectFrom('tool_groups')
              .select('tool_groups.tool_id')
              .whereRef('tool_groups.tool_id', '=', 'tools.id')
              .where('tool_groups.group_id', '=', (e) => e.fn.any(e.val(memberOf))),
          ),
          eb.exists(
            eb
              .selectFrom('mcp_server_groups')
              .select('mcp_server_groups.mcp_server_id')
              .whereRef('mcp_server_groups.mcp_server_id', '=', 'tools.mcp_server_id')
              .where('mcp_server_groups.group_id', '=', (e) => e.fn.any(e.val(memberOf))),
          ),
        ]),
      ),
    )
    .orderBy('tools.id')
    .execute();
}

/** The subset of `ids` that name existing tools. */
export async function findExistingToolIds(db: DbExecutor, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('tools').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}
