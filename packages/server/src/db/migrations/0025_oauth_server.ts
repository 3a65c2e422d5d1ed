import { type Kysely, sql } from 'kysely';

// kas as the OAuth 2.1 authorization server of its MCP endpoint. Clients register themselves (RFC 7591);
// a person's approval of one is a grant, which holds the scopes and the resource (audience) its tokens
// are for. Codes and tokens are stored only as their SHA-256 hash, as API keys and personal tokens
// are; deleting the grant (the person or an admin revokes it, or the person is deleted) ends them all.
// A used refresh token stays (`used_at`) so that presenting it again is caught as a replay.
const statements = [
  `CREATE TABLE oauth_clients (
    client_id text PRIMARY KEY,
    client_secret_encrypted text,
    client_secret_expires_at timestamptz,
    client_name text,
    redirect_uris text[] NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE oauth_grants (
    id serial PRIMARY KEY,
    client_id text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
  )`,
  `CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id)`,
  `CREATE TABLE oauth_codes (
    code_hash text PRIMARY KEY,
    client_id text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    redirect_uri text NOT NULL,
    code_challenge text NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE oauth_tokens (
    token_hash text PRIMARY KEY,
    grant_id integer NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
