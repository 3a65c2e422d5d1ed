import { type Kysely, sql } from 'kysely';

// Chat sessions, the message tree, a user's projects, uploaded files and token budgets. persona_id has
// no foreign key: personas are owned by another migration and the default agent (id 0) is built in.
const statements = [
  `CREATE TABLE user_projects (
    id serial PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name text NOT NULL,
    description text NOT NULL DEFAULT '',
    instructions text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX user_projects_user_idx ON user_projects (user_id, id)`,
  `CREATE TABLE chat_sessions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    persona_id integer NOT NULL DEFAULT 0,
    project_id integer REFERENCES user_projects(id) ON DELETE SET NULL,
    description text NOT NULL DEFAULT '',
    shared_status text NOT NULL DEFAULT 'private' CHECK (shared_status IN ('private', 'public')),
    deleted boolean NOT NULL DEFAULT false,
    current_alternate_model text,
    current_temperature_override double precision,
    stop_requested_at timestamptz,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX chat_sessions_user_updated_idx ON chat_sessions (user_id, time_updated DESC)`,
  `CREATE INDEX chat_sessions_description_fts_idx ON chat_sessions USING gin (to_tsvector('english', description))`,
  `CREATE TABLE chat_messages (
    id serial PRIMARY KEY,
    chat_session_id uuid NOT NULL REFERENCES chat_sessions(id) ON DELETE CASCADE,
    parent_message_id integer REFERENCES chat_messages(id) ON DELETE CASCADE,
    latest_child_message_id integer,
    message_type text NOT NULL CHECK (message_type IN ('system', 'user', 'assistant')),
    message text NOT NULL,
    token_count integer NOT NULL DEFAULT 0,
    citations jsonb NOT NULL DEFAULT '{}',
    context_docs jsonb NOT NULL DEFAULT '[]',
    files jsonb NOT NULL DEFAULT '[]',
    reasoning text,
    error text,
    is_complete boolean NOT NULL DEFAULT true,
    model_name text,
    time_sent timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX chat_messages_session_idx ON chat_messages (chat_session_id, id)`,
  `CREATE INDEX chat_messages_time_idx ON chat_messages (time_sent)`,
  `CREATE INDEX chat_messages_fts_idx ON chat_messages USING gin (to_tsvector('english', message))`,
  `CREATE TABLE user_files (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name text NOT NULL,
    content_type text NOT NULL,
    file_type text NOT NULL,
    size_bytes integer NOT NULL,
    text_content text NOT NULL,
    token_count integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE token_budgets (
    id serial PRIMARY KEY,
    scope text NOT NULL CHECK (scope IN ('global', 'user', 'user_group')),
    group_id integer REFERENCES user_groups(id) ON DELETE CASCADE,
    enabled boolean NOT NULL DEFAULT true,
    token_budget integer NOT NULL,
    period_hours integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
