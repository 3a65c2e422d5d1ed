import { type Kysely, sql } from 'kysely';

// A personal token minted by an API key (or by a token that key minted) lives and dies with the key:
// `created_by_api_key_id` names it, deleting the key deletes the token, and authentication refuses
// the token once the key expired or was regenerated. Tokens already owned by a key's service-account
// user were minted by that key (each key is its own user), so they are attached to it here.
//
// `oidc_subjects` links a person to the provider's stable id (`iss`, `sub`) on first sign-in: later
// sign-ins resolve through the link, so an email changed at the provider cannot reach another account.
const statements = [
  `ALTER TABLE personal_access_tokens
    ADD COLUMN created_by_api_key_id integer REFERENCES api_keys(id) ON DELETE CASCADE`,
  `CREATE INDEX personal_access_tokens_created_by_key_idx ON personal_access_tokens (created_by_api_key_id)`,
  `UPDATE personal_access_tokens t SET created_by_api_key_id = k.id FROM api_keys k WHERE k.user_id = t.user_id`,
  `CREATE TABLE oidc_subjects (
    issuer text NOT NULL,
    subject text NOT NULL,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject),
    UNIQUE (user_id, issuer)
  )`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
