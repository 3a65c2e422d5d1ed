import { type Kysely, sql } from 'kysely';

const statements = [
  `CREATE EXTENSION IF NOT EXISTS pg_trgm`,
  `CREATE TABLE users (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email text NOT NULL UNIQUE,
    role text NOT NULL CHECK (role IN ('basic', 'curator', 'admin')),
    account_type text NOT NULL DEFAULT 'service_account',
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE api_keys (
    id serial PRIMARY KEY,
    name text,
    hashed_key text NOT NULL UNIQUE,
    display text NOT NULL,
    user_id uuid NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE TABLE rate_limits (
    key varchar(255) PRIMARY KEY,
    points integer NOT NULL DEFAULT 0,
    expire bigint
  )`,
  `CREATE TABLE kv_store (
    key text PRIMARY KEY,
    value jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
