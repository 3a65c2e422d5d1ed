import { type Kysely, sql } from 'kysely';

// Actions for user groups: an OpenAPI action or MCP server may be scoped to groups. A scoped action is
// managed by admins and by the curators of all its groups, and used only by members of one of them.
// `group_scoped` stays true when its groups are deleted, so removing a group never opens an action up.
const statements = [
  `ALTER TABLE tools ADD COLUMN group_scoped boolean NOT NULL DEFAULT false`,
  `ALTER TABLE mcp_servers ADD COLUMN group_scoped boolean NOT NULL DEFAULT false`,
  `CREATE TABLE tool_groups (
    tool_id integer NOT NULL REFERENCES tools(id) ON DELETE CASCADE,
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    PRIMARY KEY (tool_id, group_id)
  )`,
  `CREATE INDEX tool_groups_group ON tool_groups (group_id)`,
  `CREATE TABLE mcp_server_groups (
    mcp_server_id integer NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    PRIMARY KEY (mcp_server_id, group_id)
  )`,
  `CREATE INDEX mcp_server_groups_group ON mcp_server_groups (group_id)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
