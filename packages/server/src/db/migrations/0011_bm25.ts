import { type Kysely, sql } from 'kysely';

/**
 * BM25 for the Postgres search index (see search/bm25.ts for the ranking and its parameters).
 *
 * - Each chunk keeps its terms (the lexemes of its `search_vector`, sorted) beside their BM25 weights:
 *   term-frequency saturation and length normalisation of the content, plus the title as a boosted
 *   field, computed when the chunk is written from the average lengths known at that time. A query
 *   then scores a chunk as Σ idf(term) · weight(term): one array lookup per query term.
 * - Document frequencies (and the chunk count and total lengths, under reserved keys that no lexeme
 *   can take) live in `search_terms`. Writers never update those rows: statement triggers append
 *   signed deltas to `search_term_deltas` (so concurrent ingestions never wait on the row of a
 *   common word), a maintenance task folds them in, and readers add the pending deltas.
 * - `search_champions`: for frequent terms, the chunks with the highest weight (the candidates a
 *   query made of frequent words scores instead of every chunk that contains them).
 *
 * The row trigger replaces the generated `search_vector` column, so the tsvector is computed once.
 */
const K1 = 1.2;
const B = 0.75;
const TITLE_WEIGHT = 1.5;

const statements = [
  `ALTER TABLE chunks ALTER COLUMN search_vector DROP EXPRESSION`,
  `ALTER TABLE chunks
    ADD COLUMN bm25_terms text[] NOT NULL DEFAULT '{}',
    ADD COLUMN bm25_weights real[] NOT NULL DEFAULT '{}',
    ADD COLUMN bm25_length integer NOT NULL DEFAULT 0,
    ADD COLUMN bm25_title_length integer NOT NULL DEFAULT 0,
    ADD COLUMN bm25_boost real NOT NULL DEFAULT 1`,
  `CREATE TABLE search_terms (
    term text PRIMARY KEY,
    df bigint NOT NULL,
    -- The document frequency when the champion list was built, and the lowest weight it holds.
    champions_df bigint,
    champion_floor real
  )`,
  `CREATE INDEX search_terms_prefix_idx ON search_terms (term text_pattern_ops)`,
  `CREATE TABLE search_term_deltas (term text NOT NULL, delta bigint NOT NULL)`,
  `CREATE INDEX search_term_deltas_term_idx ON search_term_deltas (term)`,
  `CREATE TABLE search_champions (
    term text NOT NULL,
    document_id text NOT NULL,
    chunk_id integer NOT NULL,
    weight real NOT NULL,
    PRIMARY KEY (term, document_id, chunk_id),
    FOREIGN KEY (document_id, chunk_id) REFERENCES chunks(document_id, chunk_id) ON DELETE CASCADE
  )`,
  `CREATE INDEX search_champions_chunk_idx ON search_champions (document_id, chunk_id)`,
  // Reserved statistics keys: chunk count, total content length, total title length (in lexeme positions).
  `CREATE FUNCTION kas_bm25_weights(vector tsvector, OUT terms text[], OUT weights real[], OUT len integer, OUT tlen integer)
  LANGUAGE sql STABLE AS $$
    WITH u AS (
      SELECT lexeme, cardinality(array_positions(weights, 'D')) AS tf, cardinality(array_positions(weights, 'A')) AS ttf
      FROM unnest(vector)
    ), totals AS (
      SELECT coalesce(sum(tf), 0)::int AS len, coalesce(sum(ttf), 0)::int AS tlen FROM u
    ), averages AS (
      SELECT
        CASE WHEN n.df >= 20 THEN greatest(l.df::real / n.df, 1) ELSE 120 END AS avg_len,
        CASE WHEN n.df >= 20 THEN greatest(t.df::real / n.df, 1) ELSE 6 END AS avg_tlen
      FROM (SELECT coalesce((SELECT df FROM search_terms WHERE term = E'\\x01n'), 0) AS df) n,
        (SELECT coalesce((SELECT df FROM search_terms WHERE term = E'\\x01len'), 0) AS df) l,
        (SELECT coalesce((SELECT df FROM search_terms WHERE term = E'\\x01tlen'), 0) AS df) t
    )
    SELECT
      coalesce(array_agg(u.lexeme ORDER BY u.lexeme), '{}'),
      coalesce(array_agg((
        u.tf * ${K1 + 1} / (u.tf + ${K1} * (${1 - B} + ${B} * totals.len / a.avg_len))
        + ${TITLE_WEIGHT} * u.ttf * ${K1 + 1} / (u.ttf + ${K1} * (${1 - B} + ${B} * totals.tlen / a.avg_tlen))
      )::real ORDER BY u.lexeme), '{}'),
      min(totals.len),
      min(totals.tlen)
    FROM u, totals, averages a
  $$`,
  // The document's boost as a score multiplier, kept on its chunks so that ranking needs no join when
  // access and filters do not: 0 → 1×, growing towards 2× (and 0.5× for negative boosts).
  `CREATE FUNCTION kas_boost_factor(boost integer) RETURNS real LANGUAGE sql IMMUTABLE AS
    $$ SELECT power(2, tanh(boost / 2.0))::real $$`,
  `CREATE FUNCTION kas_documents_boost() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE chunks SET bm25_boost = kas_boost_factor(NEW.boost) WHERE document_id = NEW.id;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER documents_boost_set AFTER INSERT ON documents
    FOR EACH ROW WHEN (NEW.boost <> 0) EXECUTE FUNCTION kas_documents_boost()`,
  `CREATE TRIGGER documents_boost_changed AFTER UPDATE OF boost ON documents
    FOR EACH ROW WHEN (OLD.boost IS DISTINCT FROM NEW.boost) EXECUTE FUNCTION kas_documents_boost()`,
  `CREATE FUNCTION kas_chunks_terms() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    NEW.search_vector := setweight(to_tsvector('english', NEW.title), 'A') || setweight(to_tsvector('english', NEW.content), 'D');
    SELECT w.terms, w.weights, coalesce(w.len, 0), coalesce(w.tlen, 0)
      INTO NEW.bm25_terms, NEW.bm25_weights, NEW.bm25_length, NEW.bm25_title_length
      FROM kas_bm25_weights(NEW.search_vector) w;
    NEW.bm25_boost := coalesce((SELECT kas_boost_factor(d.boost) FROM documents d WHERE d.id = NEW.document_id), 1);
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER chunks_terms BEFORE INSERT OR UPDATE OF title, content ON chunks
    FOR EACH ROW EXECUTE FUNCTION kas_chunks_terms()`,
  `CREATE FUNCTION kas_chunks_added() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO search_term_deltas (term, delta)
    SELECT t, count(*) FROM added, unnest(added.bm25_terms) AS t GROUP BY t
    UNION ALL SELECT E'\\x01n', count(*) FROM added HAVING count(*) > 0
    UNION ALL SELECT E'\\x01len', sum(bm25_length) FROM added HAVING count(*) > 0
    UNION ALL SELECT E'\\x01tlen', sum(bm25_title_length) FROM added HAVING count(*) > 0;
    RETURN NULL;
  END $$`,
  `CREATE FUNCTION kas_chunks_removed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO search_term_deltas (term, delta)
    SELECT t, -count(*) FROM removed, unnest(removed.bm25_terms) AS t GROUP BY t
    UNION ALL SELECT E'\\x01n', -count(*) FROM removed HAVING count(*) > 0
    UNION ALL SELECT E'\\x01len', -sum(bm25_length) FROM removed HAVING count(*) > 0
    UNION ALL SELECT E'\\x01tlen', -sum(bm25_title_length) FROM removed HAVING count(*) > 0;
    RETURN NULL;
  END $$`,
  `CREATE FUNCTION kas_chunks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO search_term_deltas (term, delta)
    SELECT term, sum(delta) FROM (
      SELECT t AS term, 1 AS delta FROM added, unnest(added.bm25_terms) AS t
      UNION ALL SELECT t, -1 FROM removed, unnest(removed.bm25_terms) AS t
      UNION ALL SELECT E'\\x01len', bm25_length FROM added
      UNION ALL SELECT E'\\x01len', -bm25_length FROM removed
      UNION ALL SELECT E'\\x01tlen', bm25_title_length FROM added
      UNION ALL SELECT E'\\x01tlen', -bm25_title_length FROM removed
    ) d GROUP BY term HAVING sum(delta) <> 0;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER chunks_added AFTER INSERT ON chunks REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION kas_chunks_added()`,
  `CREATE TRIGGER chunks_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION kas_chunks_removed()`,
  `CREATE TRIGGER chunks_changed AFTER UPDATE ON chunks REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION kas_chunks_changed()`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
  // Existing chunks: statistics first (so the weights use the real average lengths), then weights.
  await sql
    .raw(
      `UPDATE chunks SET search_vector = setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'D')`,
    )
    .execute(db);
  await sql
    .raw(`WITH w AS (SELECT (kas_bm25_weights(search_vector)).* FROM chunks)
      INSERT INTO search_terms (term, df)
      SELECT E'\\x01n', count(*) FROM w HAVING count(*) > 0
      UNION ALL SELECT E'\\x01len', sum(len) FROM w HAVING count(*) > 0
      UNION ALL SELECT E'\\x01tlen', sum(tlen) FROM w HAVING count(*) > 0`)
    .execute(db);
  await sql.raw(`UPDATE chunks SET title = title`).execute(db);
  await sql.raw(`DELETE FROM search_term_deltas`).execute(db);
  await sql
    .raw(`INSERT INTO search_terms (term, df)
      SELECT t, count(*) FROM chunks, unnest(bm25_terms) AS t GROUP BY t
      ON CONFLICT (term) DO UPDATE SET df = excluded.df`)
    .execute(db);
}
