import { type Kysely, sql } from 'kysely';

const statements = [
  `ALTER TABLE users DROP CONSTRAINT IF EXISTS users_role_check`,
  `ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('limited', 'basic', 'curator', 'admin'))`,
  `ALTER TABLE users ADD COLUMN is_active boolean NOT NULL DEFAULT true`,
  `CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email))`,
  `ALTER TABLE api_keys ADD COLUMN expires_at timestamptz`,
  `CREATE TABLE personal_access_tokens (
    id serial PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name text NOT NULL,
    hashed_token text NOT NULL UNIQUE,
    display text NOT NULL,
    expires_at timestamptz,
    last_used_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX personal_access_tokens_user_idx ON personal_access_tokens (user_id)`,
  `CREATE TABLE user_external_identities (
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    source text NOT NULL,
    external_id text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, external_id)
  )`,
  `CREATE INDEX user_external_identities_user_idx ON user_external_identities (user_id)`,
  `CREATE TABLE external_group_members (
    cc_pair_id integer REFERENCES cc_pairs(id) ON DELETE CASCADE,
    source text NOT NULL,
    group_id text NOT NULL,
    member text NOT NULL
  )`,
  `CREATE INDEX external_group_members_member_idx ON external_group_members (member)`,
  `CREATE INDEX external_group_members_pair_idx ON external_group_members (cc_pair_id, source)`,
  `ALTER TABLE documents ADD COLUMN access_external text[] NOT NULL DEFAULT '{}'`,
  `CREATE INDEX documents_access_external_idx ON documents USING gin (access_external)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
