import { type Kysely, sql } from 'kysely';

// Resumable attempts (issue 23): a rate-limited attempt waits in the queue until `resume_at`, with its
// checkpoint, instead of failing; the time it runs is counted apart from the time it waits or is
// paused (`active_ms`, `run_started_at`), so rate and ETA exclude waits; an attempt that continues a
// failed one's checkpoint counts the documents done before it (`docs_resumed`); `restart_requested`
// marks a from-beginning run the user asked for (the only kind that drops a kept checkpoint).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE index_attempts
    ADD COLUMN resume_at timestamptz,
    ADD COLUMN waiting_reason text,
    ADD COLUMN run_started_at timestamptz,
    ADD COLUMN active_ms bigint NOT NULL DEFAULT 0,
    ADD COLUMN docs_resumed integer NOT NULL DEFAULT 0,
    ADD COLUMN resumed_from integer,
    ADD COLUMN restart_requested boolean NOT NULL DEFAULT false`.execute(db);
}
