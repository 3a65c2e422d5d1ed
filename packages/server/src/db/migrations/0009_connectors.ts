import { type Kysely, sql } from 'kysely';

// Connectors issue: index attempts (claimed by one worker, heartbeats, a checkpoint to resume from),
// their per-document errors, credential groups (curators), and the pair's error and deletion state.
const statements = [
  `CREATE TABLE credential_groups (
    credential_id integer NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
    group_id integer NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    PRIMARY KEY (credential_id, group_id)
  )`,
  `ALTER TABLE cc_pairs ADD COLUMN deletion_failure text`,
  `ALTER TABLE cc_pairs ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0`,
  `ALTER TABLE cc_pairs ADD COLUMN retry_after timestamptz`,
  `CREATE TABLE index_attempts (
    id serial PRIMARY KEY,
    cc_pair_id integer NOT NULL REFERENCES cc_pairs(id) ON DELETE CASCADE,
    status text NOT NULL DEFAULT 'not_started'
      CHECK (status IN ('not_started', 'in_progress', 'success', 'completed_with_errors', 'failed', 'canceled')),
    from_beginning boolean NOT NULL DEFAULT false,
    poll_range_start timestamptz,
    poll_range_end timestamptz,
    checkpoint jsonb,
    docs_done integer NOT NULL DEFAULT 0,
    docs_total integer,
    new_docs_indexed integer NOT NULL DEFAULT 0,
    docs_removed integer NOT NULL DEFAULT 0,
    error_count integer NOT NULL DEFAULT 0,
    error_msg text,
    worker_id text,
    heartbeat_at timestamptz,
    time_started timestamptz,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX index_attempts_pair_idx ON index_attempts (cc_pair_id, id DESC)`,
  `CREATE INDEX index_attempts_open_idx ON index_attempts (status) WHERE status IN ('not_started', 'in_progress')`,
  `CREATE TABLE index_attempt_errors (
    id serial PRIMARY KEY,
    index_attempt_id integer NOT NULL REFERENCES index_attempts(id) ON DELETE CASCADE,
    cc_pair_id integer NOT NULL REFERENCES cc_pairs(id) ON DELETE CASCADE,
    document_id text,
    document_link text,
    failure_message text NOT NULL,
    time_created timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX index_attempt_errors_pair_idx ON index_attempt_errors (cc_pair_id, id DESC)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
