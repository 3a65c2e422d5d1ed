/**
 * BM25 ranking for the Postgres index: `Σ idf(t) · (sat(tf_content) + TITLE_WEIGHT · sat(tf_title))`,
 * times the document's boost, where `sat(tf) = tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))` per field
 * (Lucene's BM25 with the title as a second field, as Onyx's Vespa profile ranks
 * `bm25(content) + k·bm25(title)`). The per-chunk part of each term (everything but the IDF) is stored
 * with the chunk by the database (migration 0011: K1, B and TITLE_WEIGHT are frozen there, with one
 * pair of average lengths that every chunk shares, migration 0035: recorded by maintenance once the
 * index has averages, and re-recorded, every chunk re-weighted, when today's drift too far); the IDF is live.
 *
 * Fast top-k. Scoring every chunk that contains a common word costs time in proportion to that word's
 * document frequency, so a query scores a candidate set instead:
 *   - every chunk containing one of the query's rare terms (document frequency ≤ `alwaysFullDf`, plus
 *     the next rarest while their summed frequencies fit `fullBudget`, none by default), found through
 *     the GIN index;
 *   - for each remaining (frequent) term, its champion list: the chunks with the highest weight for
 *     that term (`championsFor`: 300; past 50k chunks, more with √df and at least 1 % of them), at
 *     most `copies` of one passage (chunks with the same title and text, the best of them by weight):
 *     a list's length and floor count distinct passages, not the copies of a few (a page kept in two
 *     sources, templated pages, mirrored repositories);
 *   - when the query has only frequent terms and few chunks are expected to hold all of them, those
 *     chunks (found by intersecting the terms' postings in the GIN index): a chunk with two of the
 *     query's words at ordinary weights ranks high but is on neither list.
 * The champion candidates are first ranked by what the lists alone give them (Σ idf × weight over the
 * lists a chunk is on) and only the best `scoredChampions` (at least four times the limit) go on. Each
 * remaining candidate gets its exact BM25 score over all query terms. Access and filters are conditions
 * of the same statement, checked best-scored first until the limit is reached.
 *
 * Where the result can differ from exhaustive BM25: a chunk that contains none of the rarer terms and
 * is on no champion list of the frequent terms it contains is never scored. Its weight for such a term
 * is at most the list's floor, unless `copies` chunks with its title and text are on the list, each
 * weighing at least as much for that term; so its score is at most `bound()` (the frequent terms' IDF
 * times their lowest champion weight) or, failing that, at most the score of one of those copies (the
 * same text: the same weights, unless written before the index's averages were first recorded, and
 * another document's boost may differ). The top-k is exact when the k-th score reaches that bound and no passage has more than
 * `copies` chunks among the top k; otherwise such a chunk could have ranked. A chunk written after its
 * lists were built is put on them by the next maintenance round (`foldWrittenDocuments`, migration
 * 0037); until then only the rare terms and the intersection reach it (maintenance also rebuilds a list
 * when the term's document frequency moved by a quarter, or after a bulk load). When the lists are
 * current and the k-th score of the champion candidates reaches the bound (times the highest boost,
 * `settledByLists`), the intersection is not scored: it could add only copies of passages already there,
 * tied with them, so a top-k larger than `copies` may hold fewer copies of one passage than exhaustive
 * BM25 would (the golden set's questions at 1M real-text chunks, where each passage has 265 copies: top 10
 * within 0.1 % of the exhaustive 10th score on all 68, and 0.43 against 0.67 of a top 25, of which 50 were
 * settled so). A champion
 * candidate below the `scoredChampions` cut is not scored either: one whose weights for the terms whose
 * lists it is not on would have lifted it (small on a generated corpus: top-10 agreement 0.98 → 0.97, and
 * 0.98 → 0.965 for frequent words only, in `bm25.test.ts`; the benchmark reports it at 100k chunks). Lists
 * and cut ignore access, like any index: when fewer than `limit` visible chunks come out, every visible chunk
 * that contains a query term is scored instead (`bm25SearchAll`). Weights keep the recorded average lengths
 * until maintenance finds today's drifted (`kas reindex` recomputes them at once).
 */
export const K1 = 1.2;
export const B = 0.75;
/** The title's BM25 counts this many times a content match (frozen into stored weights). */
export const TITLE_WEIGHT = 1.5;

/** How much a query may score; the defaults keep a query on 100k chunks within tens of milliseconds. */
export interface PlanLimits {
  /** Chunks kept per frequent term, at least (see `championsFor`). */
  champions: number;
  /**
   * A champion list holds at most this many chunks with the same title and text (a page in two
   * sources, templated pages, mirrored repositories): without a cap a frequent word's list fills with
   * the copies of its few best passages, and a passage that is best for two words together, but not
   * top for either alone, is on neither list. Ten copies still fill a top 10 made of one passage.
   */
  copies: number;
  /**
   * The document frequency from which a term's list grows beyond `champions`, with the square root of
   * its frequency: a very common word's best chunks by its weight alone are a thinner slice of the
   * chunks that contain it, and a second word of the query reorders more of them.
   */
  championsGrowthDf: number;
  /**
   * Past `championsGrowthDf`, at least this share of a term's chunks is on its list: a query made of
   * two very common words ranks chunks that hold both at good, not top, weights, and √df lists of the
   * two words left most of them out.
   */
  championsShare: number;
  /**
   * A query made only of frequent terms also scores every chunk that contains all of them when that
   * set is expected to be this small (the GIN index intersects the postings cheaply): a chunk with
   * two of the query's words, each at an ordinary weight, is on neither list but ranks high.
   */
  conjunctiveBudget: number;
  /** A search builds a missing list itself only for a term in at most this many chunks. */
  buildOnDemandDf: number;
  /** Chunks a search scores for a term whose list is missing and too long to build (`QueryPlan.sampled`). */
  sampledChunks: number;
  /** Terms at most this frequent are always scored in full. */
  alwaysFullDf: number;
  /** Summed document frequency of the terms scored in full beyond the always-full ones. */
  fullBudget: number;
  /**
   * Champion candidates scored exactly (at least four times the result limit): those with the highest
   * score the champion lists alone give them. A query of two very common words ranks chunks holding
   * both at ordinary weights, which the lists alone rank low (a chunk on one word's list only is
   * ranked there by that word alone), and the copies of a passage take up to `copies` places each:
   * at 100k generated chunks the cut at 200 agreed with exhaustive BM25 on 0.77 of the top 10 for two
   * very common words, 1,000 on 0.97 (~20–40 ms more on the embedded database, loaded); on the real-text
   * corpus at 1M chunks on Postgres (the manual repeated 265 times), 0.92 (very common words) to 0.96
   * (mid-frequency) of the top 10 were copies of the exhaustive top 10's passages with 200, all of
   * them with 1,000 (60 queries; the bare statement ~6 → 15 ms for two common words). With 500, top-10
   * agreement within 0.1 % of the exhaustive 10th best score was 0.962 for very common words, 0.987
   * with 1,000 (190 queries); chat's retrieval statement there takes 16, 20 and 27 ms (200, 500, 1,000).
   */
  scoredChampions: number;
  /**
   * `scoredChampions` for a query that also scores every chunk holding all of its frequent terms (the
   * intersection arm, `QueryPlan.conjunctive`), at most `scoredChampions`. The deep cut is for chunks
   * holding several query words at ordinary weights, which the lists alone rank low; those holding
   * every word are scored exactly by the intersection, so the cut has only the chunks that miss some
   * to catch. On the golden set's 68 questions at 1M real-text chunks (all of them with both arms),
   * 500 against 1,000: the top 10 within 0.1 % of the 10th best score agreed on every question (250:
   * 0.985), the same top-25 chunks 0.991 (ties between copies), and the champion statement's p50 went
   * from 16.3 to 11.2 ms. When the lists alone settle the top results (`settledByLists`) the
   * intersection is not scored, and this cut is all there is (the same 68 questions: the top 10 still
   * agreed on every one).
   */
  scoredChampionsIntersected: number;
}

/**
 * Measured on 100k chunks (test/bench/documents.ts, 1,000 queries): a budget of 5,000 gave top-10 agreement
 * with exhaustive BM25 of 1.0 / 1.0 / 0.992 (rare / mid / common) at p50 11 ms, p99 68 ms for the bare SQL
 * on Postgres; 2,000 gave 1.0 / 0.999 / 0.984 at 5.6 / 37 ms; none gave 0.995 / 0.992 / 0.984 at 5.0 / 22 ms,
 * and halved a chat question's retrieval on PGlite (a term just above 1,000 no longer scored in full).
 */
export const DEFAULT_PLAN_LIMITS: PlanLimits = {
  champions: 300,
  copies: 10,
  championsGrowthDf: 50_000,
  championsShare: 0.01,
  conjunctiveBudget: 2000,
  buildOnDemandDf: 20_000,
  sampledChunks: 1000,
  alwaysFullDf: 1000,
  fullBudget: 0,
  scoredChampions: 1000,
  scoredChampionsIntersected: 500,
};

/**
 * The length of a term's champion list: `champions`, growing with √df beyond `championsGrowthDf`, and
 * at least `championsShare` of its chunks there.
 */
export function championsFor(df: number, limits: PlanLimits = DEFAULT_PLAN_LIMITS): number {
  if (df <= limits.championsGrowthDf) return limits.champions;
  return Math.max(
    Math.round(limits.champions * Math.sqrt(df / limits.championsGrowthDf)),
    Math.round(df * limits.championsShare),
  );
}

/**
 * How many champion candidates a query for `limit` results scores exactly; fewer when its plan also
 * has the intersection arm (see `PlanLimits.scoredChampionsIntersected`).
 */
export function championsToScore(
  limit: number,
  limits: PlanLimits = DEFAULT_PLAN_LIMITS,
  plan?: Pick<QueryPlan, 'conjunctive'>,
): number {
  const cut = plan?.conjunctive.length
    ? Math.min(limits.scoredChampions, limits.scoredChampionsIntersected)
    : limits.scoredChampions;
  return Math.max(cut, 4 * limit);
}

/** At most this many terms of a query are scored. */
export const MAX_TERMS = 16;

/** Lucene's IDF: always positive, so a very common term still counts a little. */
export function idf(chunks: number, df: number): number {
  return Math.log(1 + (chunks - df + 0.5) / (df + 0.5));
}

export interface TermStats {
  term: string;
  df: number;
  /** Document frequency when the champion list was built; null when there is none. */
  champions_df: number | null;
  /** The lowest weight on the champion list. */
  champion_floor: number | null;
}

export interface QueryPlan {
  /** Scored over every chunk that contains them. */
  full: string[];
  /** Scored through their champion lists. */
  champions: TermStats[];
  /** Chunks containing every one of these terms are candidates too (empty: no such arm). */
  conjunctive: string[];
  /**
   * Frequent terms without a champion list yet (a bulk load's maintenance has not reached them): a
   * bounded number of the chunks containing them are candidates, so that a search stays fast until
   * the list exists (set by the index, never by `planQuery`).
   */
  sampled: string[];
  /** Every term with its IDF (terms absent from the index are left out). */
  scored: { term: string; idf: number }[];
}

/** Splits a query's terms into those scored in full and those scored through champion lists. */
export function planQuery(
  chunks: number,
  terms: TermStats[],
  limits: PlanLimits = DEFAULT_PLAN_LIMITS,
): QueryPlan {
  const present = [...new Map(terms.filter((t) => t.df > 0).map((t) => [t.term, t])).values()]
    .sort((a, b) => a.df - b.df || (a.term < b.term ? -1 : 1))
    .slice(0, MAX_TERMS);
  const full: string[] = [];
  const champions: TermStats[] = [];
  let spent = 0;
  for (const term of present) {
    if (term.df <= limits.alwaysFullDf || term.df <= limits.champions) full.push(term.term);
    else if (spent + term.df <= limits.fullBudget) {
      full.push(term.term);
      spent += term.df;
    } else champions.push(term);
  }
  // Expected size of the intersection, the terms taken as independent.
  const together = champions.reduce((n, t) => (n * t.df) / Math.max(chunks, 1), Math.max(chunks, 1));
  const conjunctive =
    !full.length && champions.length > 1 && together <= limits.conjunctiveBudget
      ? champions.map((t) => t.term)
      : [];
  return {
    full,
    champions,
    conjunctive,
    sampled: [],
    scored: present.map((t) => ({ term: t.term, idf: idf(chunks, t.df) })),
  };
}

/**
 * Whether a plan's champion lists hold every chunk that weighs more than their floors but the copies of
 * a passage they leave out: each list was built in full (not from a sample) at about today's frequency,
 * and no written document waits to be put on the lists (migration 0037).
 */
export function listsCurrent(plan: QueryPlan, state: { listsBehind: boolean }): boolean {
  return (
    !state.listsBehind &&
    !plan.sampled.length &&
    plan.champions.every(
      (t) =>
        t.champions_df !== null &&
        t.champions_df > 0 &&
        t.champion_floor !== null &&
        t.df <= t.champions_df * 1.25 &&
        t.df >= t.champions_df * 0.75,
    )
  );
}

/**
 * Whether the champion candidates' `limit`-th best score (`kth`) is at least the most a chunk on none
 * of the lists can score, its document's boost included: no chunk off the lists can then enter the top
 * `limit`, but copies of a passage the lists hold (which they keep `copies` of), tied with them. Only
 * for lists that are current (`listsCurrent`). The candidates past the `scoredChampionsIntersected`
 * cut stay unscored, as for any query without the intersection arm: on the golden set's 68 questions
 * at 1M real-text chunks the top 10 so settled agreed with exhaustive BM25 (within 0.1 % of the 10th
 * score) on every question, for 10 and for 25 results.
 */
export function settledByLists(
  plan: QueryPlan,
  state: { listsBehind: boolean; maxBoost: number },
  kth: number | undefined,
): boolean {
  return kth !== undefined && listsCurrent(plan, state) && kth >= bound(plan) * state.maxBoost;
}

/** The highest score a chunk that was not a candidate can have (boost aside). */
export function bound(plan: QueryPlan): number {
  const idfOf = new Map(plan.scored.map((s) => [s.term, s.idf]));
  return plan.champions.reduce((sum, t) => sum + (idfOf.get(t.term) ?? 0) * (t.champion_floor ?? 0), 0);
}
