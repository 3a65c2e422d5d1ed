import { type Kysely, sql } from 'kysely';

// Cross-process invalidation of the auth cache on a shared Postgres (auth/pg-auth-cache.ts). Every change
// to the tables an actor is read from publishes a new epoch on the `kas_auth` channel at commit, so even a
// change made outside kas (psql, another tool) clears every listening process's cache within milliseconds.
// kas's own write paths also publish explicitly and wait for every listener to acknowledge.
const statements = [
  `CREATE SEQUENCE kas_auth_epoch`,
  `CREATE FUNCTION kas_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('kas_auth', nextval('kas_auth_epoch')::text);
      RETURN NULL;
    END $$`,
  ...['api_keys', 'users', 'personal_access_tokens'].map(
    (table) => `CREATE TRIGGER ${table}_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table}
      FOR EACH STATEMENT EXECUTE FUNCTION kas_auth_changed()`,
  ),
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
