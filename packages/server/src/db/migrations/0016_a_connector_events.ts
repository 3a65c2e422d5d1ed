import { type Kysely, sql } from 'kysely';

// Webhook deliveries of `event` connectors, stored when they are accepted and processed by the worker
// (the request answers at once: Slack allows 3 s). One row per verified pair; `refs` are what the
// source's `events.verify` named. A row claimed by a worker that then died goes back to `queued`.
const statements = [
  `CREATE TABLE connector_events (
    id bigserial PRIMARY KEY,
    cc_pair_id integer NOT NULL REFERENCES cc_pairs(id) ON DELETE CASCADE,
    refs jsonb NOT NULL,
    status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'in_progress', 'done', 'failed')),
    tries integer NOT NULL DEFAULT 0,
    next_try_at timestamptz NOT NULL DEFAULT now(),
    worker_id text,
    heartbeat_at timestamptz,
    error_msg text,
    documents_indexed integer NOT NULL DEFAULT 0,
    documents_removed integer NOT NULL DEFAULT 0,
    time_created timestamptz NOT NULL DEFAULT now(),
    time_updated timestamptz NOT NULL DEFAULT now()
  )`,
  `CREATE INDEX connector_events_queue_idx ON connector_events (next_try_at, id) WHERE status = 'queued'`,
  `CREATE INDEX connector_events_pair_idx ON connector_events (cc_pair_id, id DESC)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
