import { type Kysely, sql } from 'kysely';

// Agents (personas), the tools they can use, and their labels. Persona 0 is the built-in default agent:
// inserted with an explicit id, so the serial sequence still hands out 1 to the first user-created agent.
// document_ids and hierarchy_node_ids carry no foreign key: they name index entries that other domains own.
const statements = [
  `CREATE TABLE tools (
    id serial PRIMARY KEY,
    name text NOT NULL,
    display_name text NOT NULL,
    description text NOT NULL DEFAULT '',
    kind text NOT NULL CHECK (kind IN ('builtin', 'openapi', 'mcp')),
    in_code_tool_id text UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `INSERT INTO tools (id, name, display_name, description, kind, in_code_tool_id) VALUES
    (1, 'internal_search', 'Search', 'Searches the indexed documents the user has access to.', 'builtin', 'SearchTool')`,
  `SELECT setval(pg_get_serial_sequence('tools', 'id'), 1)`,
  `CREATE TABLE personas (
    id serial PRIMARY KEY,
    name text NOT NULL,
    description text NOT NULL DEFAULT '',
    system_prompt text NOT NULL DEFAULT '',
    task_prompt text NOT NULL DEFAULT '',
    datetime_aware boolean NOT NULL DEFAULT true,
    replace_base_system_prompt boolean NOT NULL DEFAULT false,
    is_public boolean NOT NULL DEFAULT true,
    is_listed boolean NOT NULL DEFAULT true,
    is_featured boolean NOT NULL DEFAULT false,
    builtin_persona boolean NOT NULL DEFAULT false,
    display_priority integer,
    llm_model_provider_override text,
    llm_model_version_override text,
    starter_messages jsonb NOT NULL DEFAULT '[]'::jsonb,
    search_start_date timestamptz,
    owner_id uuid REFERENCES users(id) ON DELETE SET NULL,
    deleted boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX personas_order_idx ON personas (display_priority, id)`,
  `CREATE INDEX personas_owner_idx ON personas (owner_id)`,
  `INSERT INTO personas (id, name, description, is_public, is_listed, is_featured, builtin_persona, display_priority)
    VALUES (0, 'Assistant', 'Your AI assistant with search capabilities.', true, true, true, true, 0)`,
  `CREATE TABLE persona_users (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (persona_id, user_id)
  )`,
  `CREATE INDEX persona_users_user_idx ON persona_users (user_id)`,
  `CREATE TABLE persona_groups (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    PRIMARY KEY (persona_id, group_id)
  )`,
  `CREATE INDEX persona_groups_group_idx ON persona_groups (group_id)`,
  `CREATE TABLE persona_document_sets (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    document_set_id integer NOT NULL REFERENCES document_sets(id) ON DELETE CASCADE,
    PRIMARY KEY (persona_id, document_set_id)
  )`,
  `CREATE TABLE persona_tools (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    tool_id integer NOT NULL REFERENCES tools(id) ON DELETE CASCADE,
    PRIMARY KEY (persona_id, tool_id)
  )`,
  `CREATE INDEX persona_tools_tool_idx ON persona_tools (tool_id)`,
  `INSERT INTO persona_tools (persona_id, tool_id) VALUES (0, 1)`,
  `CREATE TABLE persona_labels (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE persona_label_links (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    label_id integer NOT NULL REFERENCES persona_labels(id) ON DELETE CASCADE,
    PRIMARY KEY (persona_id, label_id)
  )`,
  `CREATE TABLE persona_documents (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    document_id text NOT NULL,
    PRIMARY KEY (persona_id, document_id)
  )`,
  `CREATE TABLE persona_hierarchy_nodes (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    hierarchy_node_id integer NOT NULL,
    PRIMARY KEY (persona_id, hierarchy_node_id)
  )`,
  `CREATE TABLE persona_user_files (
    persona_id integer NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    user_file_id text NOT NULL,
    PRIMARY KEY (persona_id, user_file_id)
  )`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
