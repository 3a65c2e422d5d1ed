import { type Kysely, sql } from 'kysely';

// Shared by several domains: agents, documents and connectors all grant access to groups, and agents
// and search both scope by document sets.
const statements = [
  `CREATE TABLE user_groups (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE user_group_members (
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    is_curator boolean NOT NULL DEFAULT false,
    PRIMARY KEY (group_id, user_id)
  )`,
  `CREATE INDEX user_group_members_user_idx ON user_group_members (user_id)`,
  `CREATE TABLE document_sets (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT '',
    is_public boolean NOT NULL DEFAULT true,
    owner_id uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE document_set_groups (
    document_set_id integer NOT NULL REFERENCES document_sets(id) ON DELETE CASCADE,
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    PRIMARY KEY (document_set_id, group_id)
  )`,
  `CREATE TABLE document_set_users (
    document_set_id integer NOT NULL REFERENCES document_sets(id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (document_set_id, user_id)
  )`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
