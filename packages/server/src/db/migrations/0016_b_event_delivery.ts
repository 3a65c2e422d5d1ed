import { type Kysely, sql } from 'kysely';

// The source's id of a webhook delivery (GitHub `X-GitHub-Delivery`, Slack `event_id`): a redelivery
// of the same event to the same pair is stored once (GitHub "Redeliver", Slack retries after 3 s).
const statements = [
  `ALTER TABLE connector_events ADD COLUMN delivery_id text`,
  `CREATE UNIQUE INDEX connector_events_delivery_idx ON connector_events (cc_pair_id, delivery_id)
    WHERE delivery_id IS NOT NULL`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
