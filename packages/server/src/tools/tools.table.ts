import type { Generated } from 'kysely';
import type { CreatedAt, Json } from '../db/columns.ts';

export interface ToolsTable {
  id: Generated<number>;
  name: string;
  display_name: string;
  description: Generated<string>;
  kind: 'builtin' | 'openapi' | 'mcp';
  in_code_tool_id: string | null;
  /** OpenAPI actions: the validated specification. */
  openapi_schema: Json<Record<string, unknown> | null>;
  /** OpenAPI actions: `[{key, value}]` as JSON, encrypted with the secret box. */
  custom_headers_enc: string | null;
  passthrough_auth: Generated<boolean>;
  oauth_config_id: number | null;
  user_id: string | null;
  enabled: Generated<boolean>;
  mcp_server_id: number | null;
  /** Scoped to the groups in `tool_groups` (migration 0015). */
  group_scoped: Generated<boolean>;
  mcp_input_schema: Json<Record<string, unknown> | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface ToolsTables {
  tools: ToolsTable;
}
