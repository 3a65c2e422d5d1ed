import { type Kysely, sql } from 'kysely';

/**
 * Every stored BM25 weight uses one pair of average lengths: the pair maintenance recorded (search
 * repository's `\x01wlen` / `\x01wtlen`, × 1000) once the index had averages, re-recorded when today's
 * drift too far and every chunk is re-weighted with them. Before, each chunk was weighted with the
 * averages folded when it was written, so the same text written at two moments scored a little
 * differently (up to ~2 % after a 1M-chunk load): a page kept in two sources ranked by its write time,
 * and an exhaustive ranking's top 10 held other copies of a passage than the champion lists did. Until
 * a pair is recorded (a new index), the folded averages as before, or the defaults below 20 chunks.
 */
const K1 = 1.2;
const B = 0.75;

const statements = [
  `CREATE OR REPLACE FUNCTION kas_bm25_weights(vector tsvector)
  RETURNS TABLE (terms text[], weights real[], len integer, tlen integer)
  LANGUAGE sql STABLE ROWS 1 AS $$
    SELECT
      coalesce(s.terms, '{}'),
      coalesce((
        SELECT array_agg((
          (f.tf * 22)::float8 / 10 / (f.tf + ${K1} * (${1 - B} + ${B}::float8 * s.len / a.avg_len))
          + (f.ttf * 33)::float8 / 10 / (f.ttf + ${K1} * (${1 - B} + ${B}::float8 * s.tlen / a.avg_tlen))
        )::real) FROM unnest(s.tfs, s.ttfs) AS f(tf, ttf)
      ), '{}'),
      s.len,
      s.tlen
    FROM (
      SELECT array_agg(lexeme) AS terms, array_agg(tf) AS tfs, array_agg(ttf) AS ttfs,
        sum(tf)::int AS len, sum(ttf)::int AS tlen
      FROM (
        SELECT lexeme, cardinality(array_positions(weights, 'D')) AS tf,
          cardinality(array_positions(weights, 'A')) AS ttf
        FROM unnest(vector)
      ) u
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
