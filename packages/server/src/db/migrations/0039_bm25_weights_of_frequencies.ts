import { type Kysely, sql } from 'kysely';

/**
 * `kas_bm25_weights_of(vector, tfs, ttfs)`: a chunk's BM25 terms and weights as `kas_bm25_weights(vector)`
 * gives them (migration 0035: the same formula and averages), from its term frequencies counted
 * elsewhere: the text thread (db/text-thread.ts) counts them beside the vector, in the order of the
 * vector's lexemes, and the embedded database's one thread, the bottleneck of a bulk load, no longer
 * unnests each vector for them (~0.2–0.3 of ~2.6 ms per two-chunk document). The averages are still
 * read by the statement that writes the chunk, which is what a re-weighting's cut relies on.
 */
const K1 = 1.2;
const B = 0.75;

const statements = [
  `CREATE FUNCTION kas_bm25_weights_of(vector tsvector, tfs integer[], ttfs integer[])
  RETURNS TABLE (terms text[], weights real[], len integer, tlen integer)
  LANGUAGE sql STABLE ROWS 1 AS $$
    SELECT
      tsvector_to_array(vector),
      coalesce((
        SELECT array_agg((
          (f.tf * 22)::float8 / 10 / (f.tf + ${K1} * (${1 - B} + ${B}::float8 * s.len / a.avg_len))
          + (f.ttf * 33)::float8 / 10 / (f.ttf + ${K1} * (${1 - B} + ${B}::float8 * s.tlen / a.avg_tlen))
        )::real) FROM unnest(tfs, ttfs) AS f(tf, ttf)
      ), '{}'),
      s.len,
      s.tlen
    FROM (
      SELECT (SELECT sum(f)::int FROM unnest(tfs) AS f) AS len, (SELECT sum(f)::int FROM unnest(ttfs) AS f) AS tlen
    ) s, (
      SELECT
        CASE WHEN w.df IS NOT NULL THEN greatest(w.df::float8 / 1000, 1)
          WHEN n.df >= 20 THEN greatest(l.df::real / n.df, 1) ELSE 120 END AS avg_len,
        CASE WHEN wt.df IS NOT NULL THEN greatest(wt.df::float8 / 1000, 1)
          WHEN n.df >= 20 THEN greatest(t.df::real / n.df, 1) ELSE 6 END AS avg_tlen
      FROM (SELECT coalesce((SELECT df FROM search_terms WHERE term = E'\\x01n'), 0) AS df) n,
        (SELECT coalesce((SELECT df FROM search_terms WHERE term = E'\\x01len'), 0) AS df) l,
        (SELECT coalesce((SELECT df FROM search_terms WHERE term = E'\\x01tlen'), 0) AS df) t,
        (SELECT (SELECT df FROM search_terms WHERE term = E'\\x01wlen') AS df) w,
        (SELECT (SELECT df FROM search_terms WHERE term = E'\\x01wtlen') AS df) wt
    ) a
  $$`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}
