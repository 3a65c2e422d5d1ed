import { type Kysely, sql } from 'kysely';

// Reads served by Postgres replicas must never apply access rules older than the primary's
// (db/replicas.ts): every change to who may see or do what advances `kas_access_epoch` and notifies
// `kas_access` at commit; each process then requires replicas to have replayed past the primary's
// position after the change, and reads the epoch before each replica read to catch a change whose
// notification has not arrived yet. Tables of rules change
// rarely (a notice per statement); documents change constantly, so only rows whose access columns
// actually changed notify (a row trigger whose WHEN is evaluated without calling the function).
const RULE_TABLES = [
  'users',
  'api_keys',
  'personal_access_tokens',
  'user_groups',
  'user_group_members',
  'credentials',
  'credential_groups',
  'cc_pair_groups',
  'document_sets',
  'document_set_groups',
  'document_set_users',
  'document_set_cc_pairs',
  'personas',
  'persona_users',
  'persona_groups',
  'user_external_identities',
  'external_group_members',
  'tool_groups',
  'mcp_server_groups',
];

const statements = [
  // Counts access changes (taken before commit, so a reader sees a change that is committing too).
  `CREATE SEQUENCE kas_access_epoch`,
  `CREATE FUNCTION kas_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM nextval('kas_access_epoch');
      PERFORM pg_notify('kas_access', '');
      RETURN NULL;
    END $$`,
  ...RULE_TABLES.map(
    (
      table,
    ) => `CREATE TRIGGER ${table}_access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table}
      FOR EACH STATEMENT EXECUTE FUNCTION kas_access_changed()`,
  ),
  // A pair's status and times change on every index attempt; only its access matters here.
  `CREATE TRIGGER cc_pairs_access_changed AFTER UPDATE OF access_type, creator_id, credential_id OR DELETE
    ON cc_pairs FOR EACH STATEMENT EXECUTE FUNCTION kas_access_changed()`,
  `CREATE TRIGGER documents_access_changed AFTER UPDATE ON documents FOR EACH ROW
    WHEN (OLD.is_public IS DISTINCT FROM NEW.is_public
      OR OLD.access_user_ids IS DISTINCT FROM NEW.access_user_ids
      OR OLD.access_group_ids IS DISTINCT FROM NEW.access_group_ids
      OR OLD.access_external IS DISTINCT FROM NEW.access_external
      OR OLD.hidden IS DISTINCT FROM NEW.hidden)
    EXECUTE FUNCTION kas_access_changed()`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
