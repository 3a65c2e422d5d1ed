import { type Kysely, sql } from 'kysely';

// Actions: OpenAPI tools, OAuth configurations with per-user tokens, MCP servers with per-user
// connection configs. Secrets (headers, client secrets, tokens, keys) are stored encrypted as text.
// Tool rows of an MCP server cascade with it, and persona_tools cascades with the tool rows, so
// removing an action removes it from every agent.
const statements = [
  `CREATE TABLE oauth_configs (
    id serial PRIMARY KEY,
    name text NOT NULL,
    authorization_url text NOT NULL,
    token_url text NOT NULL,
    client_id_enc text NOT NULL,
    client_secret_enc text NOT NULL,
    scopes jsonb NOT NULL DEFAULT '[]'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE oauth_user_tokens (
    oauth_config_id integer NOT NULL REFERENCES oauth_configs(id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_enc text NOT NULL,
    expires_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (oauth_config_id, user_id)
  )`,
  `CREATE TABLE mcp_servers (
    id serial PRIMARY KEY,
    name text NOT NULL,
    description text NOT NULL DEFAULT '',
    server_url text NOT NULL,
    transport text NOT NULL CHECK (transport IN ('STREAMABLE_HTTP', 'SSE')),
    auth_type text NOT NULL CHECK (auth_type IN ('NONE', 'API_TOKEN', 'OAUTH', 'PT_OAUTH')),
    auth_performer text NOT NULL CHECK (auth_performer IN ('ADMIN', 'PER_USER')),
    status text NOT NULL DEFAULT 'CREATED',
    admin_config_enc text,
    owner_id uuid REFERENCES users(id) ON DELETE SET NULL,
    last_refreshed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE mcp_user_configs (
    mcp_server_id integer NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    config_enc text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (mcp_server_id, user_id)
  )`,
  `CREATE TABLE oauth_states (
    state text PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    oauth_config_id integer REFERENCES oauth_configs(id) ON DELETE CASCADE,
    mcp_server_id integer REFERENCES mcp_servers(id) ON DELETE CASCADE,
    data_enc text NOT NULL,
    expires_at timestamptz NOT NULL
  )`,
  `ALTER TABLE tools
    ADD COLUMN openapi_schema jsonb,
    ADD COLUMN custom_headers_enc text,
    ADD COLUMN passthrough_auth boolean NOT NULL DEFAULT false,
    ADD COLUMN oauth_config_id integer REFERENCES oauth_configs(id) ON DELETE SET NULL,
    ADD COLUMN user_id uuid REFERENCES users(id) ON DELETE SET NULL,
    ADD COLUMN enabled boolean NOT NULL DEFAULT true,
    ADD COLUMN mcp_server_id integer REFERENCES mcp_servers(id) ON DELETE CASCADE,
    ADD COLUMN mcp_input_schema jsonb`,
  `CREATE INDEX tools_mcp_server_idx ON tools (mcp_server_id)`,
  `CREATE UNIQUE INDEX tools_mcp_server_name_idx ON tools (mcp_server_id, name) WHERE mcp_server_id IS NOT NULL`,
  `ALTER TABLE chat_messages ADD COLUMN tool_calls jsonb NOT NULL DEFAULT '[]'::jsonb`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
