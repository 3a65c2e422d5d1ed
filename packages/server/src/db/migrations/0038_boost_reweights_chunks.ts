import { type Kysely, sql } from 'kysely';

/**
 * A change of a document's boost also re-weights its chunks with the average lengths recorded now.
 * A re-weighting (search/postgres.ts, `keepOneSetOfAverages`) walks only the chunks whose row version
 * is older than the recording of its averages: a chunk written since was weighted with them already.
 * The boost's update writes a new version of each chunk of its document, which the walk would then
 * take for written since; weighting it in the same update keeps that true.
 */
const statements = [
  `CREATE OR REPLACE FUNCTION kas_documents_boost() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE chunks SET (bm25_terms, bm25_weights, bm25_boost) =
      (SELECT w.terms, w.weights, kas_boost_factor(NEW.boost) FROM kas_bm25_weights(search_vector) w)
    WHERE document_id = NEW.id;
    RETURN NULL;
  END $$`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
