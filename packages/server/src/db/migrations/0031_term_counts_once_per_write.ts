import { type Kysely, sql } from 'kysely';

/**
 * A writer that inserts a group of new documents' chunks in several statements (kas's group commit:
 * 64 chunks per statement on Postgres, 16 on the embedded database, so that searches get in between)
 * may count their terms once, after the last statement, instead of at the end of each: it sets
 * `kas.count_terms_later` for its transaction, and the insert trigger then leaves the counting to it
 * (documents.repository.ts, `insertNewDocuments`). Each count appends one row per distinct term of the
 * statement's chunks to `search_term_deltas`: counted once per group, about a third fewer rows on
 * Postgres and half on the embedded database for ~300-word documents, which every fold then deletes.
 */
const statements = [
  `CREATE OR REPLACE FUNCTION kas_chunks_added() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF current_setting('kas.count_terms_later', true) = 'on' THEN
      RETURN NULL;
    END IF;
    INSERT INTO search_term_deltas (term, delta)
    SELECT t, count(*) FROM added, unnest(added.bm25_terms) AS t GROUP BY t
    UNION ALL SELECT E'\\x01n', count(*) FROM added HAVING count(*) > 0
    UNION ALL SELECT E'\\x01len', sum(bm25_length) FROM added HAVING count(*) > 0
    UNION ALL SELECT E'\\x01tlen', sum(bm25_title_length) FROM added HAVING count(*) > 0;
    RETURN NULL;
  END $$`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
