import { type Kysely, sql } from 'kysely';

// Chat history listing and search without scanning every session and message of the user (the soak's
// p99 grew with the history: chat search computed to_tsvector over every message, ≈ 0.3 ms each).
// Sessions are listed newest first by creation; the search's substring match (ILIKE) uses trigrams,
// its word match the existing full-text index, so a search costs in proportion to what it finds.
const statements = [
  `CREATE INDEX chat_sessions_user_created_idx ON chat_sessions (user_id, time_created DESC, id)`,
  `CREATE INDEX chat_messages_message_trgm_idx ON chat_messages USING gin (message gin_trgm_ops)
    WHERE message_type <> 'system'`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
