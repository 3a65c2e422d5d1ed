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
    UPDATE chunks c SET (bm25_terms, bm25_weights, bm25_boost) = (w.terms, w.weights, kas_boost_factor(NEW.boost))
    FROM chunks k, LATERAL kas_bm25_weights(k.search_vector) w
    WHERE c.document_id = NEW.id AND k.document_id = c.document_id AND k.chunk_id = c.chunk_id;
    RETURN NULL;
  END $$`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
