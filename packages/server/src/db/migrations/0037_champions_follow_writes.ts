import { type Kysely, sql } from 'kysely';

/**
 * Champion lists follow the chunks written after they were built. A list held a term's best chunks when
 * it was built, and was rebuilt only once the term's frequency had drifted by a quarter: a document
 * written (or written again: its chunks are replaced, and the cascade takes them off every list) in
 * between was on no list, so a query of frequent words missed it however well it matched, unless it
 * held every word of the query (the intersection arm). Now each write appends its documents' ids to
 * `search_written_documents` (one row per statement, or per group where the terms are counted once),
 * and maintenance puts their chunks on the lists whose floor they pass (`foldWrittenDocuments`): a
 * list then holds every chunk weighing more than its floor, apart from the copies of a passage it
 * leaves out, which is what lets a search skip the intersection arm when the lists alone settle the
 * top results (search/postgres.ts).
 *
 * A search that skips the intersection arm bounds the score of a chunk on no list by the lists' floors
 * times the highest document boost: `documents_boosted_idx` finds that boost at once.
 *
 * The lists built before this migration may miss chunks written since they were built: they are marked
 * stale (built at a frequency of 1, as migration 0033 did), so that maintenance rebuilds them.
 */
const statements = [
  `CREATE TABLE search_written_documents (document_ids text[] NOT NULL)`,
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
    INSERT INTO search_written_documents (document_ids)
    SELECT array_agg(DISTINCT document_id) FROM added HAVING count(*) > 0;
    RETURN NULL;
  END $$`,
  `CREATE INDEX documents_boosted_idx ON documents (boost) WHERE boost > 0`,
  `UPDATE search_terms SET champions_df = 1 WHERE champions_df > 1`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
