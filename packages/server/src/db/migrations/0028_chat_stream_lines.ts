import { type Kysely, sql } from 'kysely';

// The lines of each chat answer's stream as they are produced, so a client that lost its connection
// resumes from any process (each reads the table). `last` marks the line that ends the run (stop or
// error). Bounded by size per run and by age (KAS_STREAM_BUFFER_*), and deleted with the answer.
const statements = [
  `CREATE TABLE chat_stream_lines (
    message_id integer NOT NULL REFERENCES chat_messages(id) ON DELETE CASCADE,
    seq integer NOT NULL,
    line text NOT NULL,
    last boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (message_id, seq)
  )`,
  `CREATE INDEX chat_stream_lines_created_idx ON chat_stream_lines (created_at)`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
