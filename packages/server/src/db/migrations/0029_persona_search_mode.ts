import { type Kysely, sql } from 'kysely';

// When an agent searches: 'always_first' (with the question, before the model answers), 'when_asked'
// (only when the model calls the search tool) or 'never'; null: always first for a provider without tool
// calling, when asked otherwise.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE personas ADD COLUMN search_mode text`.execute(db);
}
