import { type Kysely, sql } from 'kysely';

// A chat turn reserves its estimated cost here before it is answered and deletes the row once its answer's
// tokens are saved: concurrent questions (from any process) see each other's reservations, so a budget
// cannot be overshot by answering many questions at once.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE TABLE token_budget_reservations (
    id serial PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tokens integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`.execute(db);
  await sql`CREATE INDEX token_budget_reservations_user ON token_budget_reservations (user_id)`.execute(db);
}
