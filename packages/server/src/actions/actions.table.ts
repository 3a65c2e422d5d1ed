import type { Generated } from 'kysely';
import type { CreatedAt, Json, Timestamp } from '../db/columns.ts';

export interface OauthConfigsTable {
  id: Generated<number>;
  name: string;
  authorization_url: string;
  token_url: string;
  client_id_enc: string;
  client_secret_enc: string;
  scopes: Json<string[]>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface OauthUserTokensTable {
  oauth_config_id: number;
  user_id: string;
  token_enc: string;
  expires_at: Timestamp | null;
  updated_at: CreatedAt;
}

export type McpTransport = 'STREAMABLE_HTTP' | 'SSE';
export type McpAuthType = 'NONE' | 'API_TOKEN' | 'OAUTH' | 'PT_OAUTH';
export type McpAuthPerformer = 'ADMIN' | 'PER_USER';

export interface McpServersTable {
  id: Generated<number>;
  name: string;
  description: Generated<string>;
  server_url: string;
  transport: McpTransport;
  auth_type: McpAuthType;
  auth_performer: McpAuthPerformer;
  status: Generated<string>;
  admin_config_enc: string | null;
  owner_id: string | null;
  group_scoped: Generated<boolean>;
  last_refreshed_at: Timestamp | null;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface McpUserConfigsTable {
  mcp_server_id: number;
  user_id: string;
  config_enc: string;
  updated_at: CreatedAt;
}

export interface OauthStatesTable {
  state: string;
  user_id: string;
  oauth_config_id: number | null;
  mcp_server_id: number | null;
  data_enc: string;
  expires_at: Timestamp;
}

export interface ToolGroupsTable {
  tool_id: number;
  group_id: number;
}

export interface McpServerGroupsTable {
  mcp_server_id: number;
  group_id: number;
}

export interface ActionsTables {
  oauth_configs: OauthConfigsTable;
  oauth_user_tokens: OauthUserTokensTable;
  mcp_servers: McpServersTable;
  mcp_user_configs: McpUserConfigsTable;
  oauth_states: OauthStatesTable;
  tool_groups: ToolGroupsTable;
  mcp_server_groups: McpServerGroupsTable;
}
