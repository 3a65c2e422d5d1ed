import { type Kysely, type RawBuilder, sql } from 'kysely';
import { type DbExecutor, isLockNotAvailable, outsideBackground } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { closest, transpositionsOf } from '../edit-distance.ts';
import { DEFAULT_PLAN_LIMITS, type QueryPlan, type TermStats } from './bm25.ts';
import type { AccessScope, IndexFilters, SearchHit, SearchRequest, StoredChunk } from './search-index.ts';

/**
 * Access and filters on `documents d`, as SQL conditions; always at least that the document is not
 * being written in stages (`pending`: its chunks arrive in several transactions before it is published).
 */
function documentConditionList(filters: IndexFilters, access: AccessScope): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [sql`NOT d.pending`];
  if (!access.all) {
    conditions.push(
      sql`(d.is_public OR d.access_user_ids @> ARRAY[${access.user_id}]::uuid[] OR d.access_group_ids && ${access.group_ids}::int[] OR d.access_external && ${access.external}::text[])`,
    );
  }
  if (!filters.include_hidden) conditions.push(sql`NOT d.hidden`);
  if (filters.source_types) conditions.push(sql`d.source = ANY(${filters.source_types}::text[])`);
  if (filters.time_cutoff) conditions.push(sql`d.doc_updated_at >= ${filters.time_cutoff}`);
  if (filters.tags) conditions.push(sql`d.tags && ${filters.tags}::text[]`);
  if (filters.document_ids) conditions.push(sql`d.id = ANY(${filters.document_ids}::text[])`);
  if (filters.document_sets) {
    conditions.push(sql`EXISTS (
      SELECT 1 FROM document_by_cc_pair o
      JOIN document_set_cc_pairs l ON l.cc_pair_id = o.cc_pair_id
      JOIN document_sets s ON s.id = l.document_set_id
      WHERE o.document_id = d.id AND s.name = ANY(${filters.document_sets}::text[]))`);
  }
  return conditions;
}

/** Access and filters on `documents d`, as one SQL condition. */
export function documentConditions(filters: IndexFilters, access: AccessScope): RawBuilder<boolean> {
  const conditions = documentConditionList(filters, access);
  if (!conditions.length) return sql<boolean>`true`;
  return sql<boolean>`${sql.join(conditions, sql` AND `)}`;
}

/** Reserved `search_terms` keys (no lexeme contains a control character): chunk count, total lengths. */
const CHUNK_COUNT_KEY = '\u0001n';
const LENGTH_KEY = '\u0001len';
const TITLE_LENGTH_KEY = '\u0001tlen';
const RESERVED_KEYS = '\u0001%';
/**
 * Reserved keys of the averages every chunk written since they were recorded is weighted with (stored
 * × 1000, as `df` is an integer; see `recordWeightedLengths`), of the mark that they were recorded
 * without re-weighting the chunks before, and of the sums over chunks of the averages each was
 * weighted with (× 1000), kept by every fold.
 */
const WEIGHTED_LENGTH_KEY = '\u0001wlen';
const WEIGHTED_TITLE_LENGTH_KEY = '\u0001wtlen';
const RECORDED_ONLY_KEY = '\u0001wrec';
const WEIGHTED_LENGTH_SUM_KEY = '\u0001wlsum';
const WEIGHTED_TITLE_LENGTH_SUM_KEY = '\u0001wtlsum';
/** … and of their squares (not scaled), for how far they spread around today's averages. */
const WEIGHTED_LENGTH_SQUARES_KEY = '\u0001wlsq';
const WEIGHTED_TITLE_LENGTH_SQUARES_KEY = '\u0001wtlsq';

/** A tsquery literal matching any of these lexemes (no parsing or stemming of its own). */
function anyLexeme(lexemes: string[]): string {
  return lexemes.map((l) => `'${l.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`).join(' | ');
}

/** A tsquery literal matching chunks that contain every one of these lexemes. */
function everyLexeme(lexemes: string[]): string {
  return anyLexeme(lexemes).replaceAll("' | '", "' & '");
}

/** A `StoredChunk` from `chunks c` and `documents d`. */
const STORED_CHUNK_COLUMNS = sql`c.document_id, c.chunk_id, c.content, c.blurb, c.link, c.section_links,
  d.semantic_id AS semantic_identifier, d.title, d.source AS source_type, d.doc_updated_at AS updated_at,
  d.metadata, d.link AS document_link, d.hidden, d.boost`;
/** The same columns but the key, as named by `STORED_CHUNK_COLUMNS`. */
const STORED_CHUNK_FIELDS = [
  'content',
  'blurb',
  'link',
  'section_links',
  'semantic_identifier',
  'title',
  'source_type',
  'updated_at',
  'metadata',
  'document_link',
  'hidden',
  'boost',
] as const;

export interface QueryTerms {
  /** The chunks in the index. */
  chunks: number;
  /** For each word of the query, in order, its lexemes (none for stop words). */
  lexemes: string[][];
  terms: TermStats[];
  /** Whether written documents wait for their chunks to be put on the champion lists (migration 0037). */
  listsBehind: boolean;
  /** The highest score multiplier of a document's boost (1 when none is boosted). */
  maxBoost: number;
}

/**
 * The lexemes of the query's words (the same stemming as the chunks'; `stemmed` words are lexemes
 * already) and their statistics, with
 * the deltas that maintenance has not folded in yet. One round trip.
 */
export async function queryTerms(
  db: DbExecutor,
  words: string[],
  options: { stemmed?: boolean } = {},
): Promise<QueryTerms> {
  const result = await sql<{
    i: number;
    term: string;
    df: number;
    champions_df: number | null;
    champion_floor: number | null;
  }>`
    WITH lexemes AS (
      SELECT w.i::int AS i, u.lexeme AS term
      FROM unnest(${words}::text[]) WITH ORDINALITY AS w(word, i),
        unnest(CASE WHEN ${options.stemmed ?? false} THEN array_to_tsvector(ARRAY[w.word]) ELSE to_tsvector('english', w.word) END) AS u
      UNION ALL SELECT 0, ${CHUNK_COUNT_KEY}::text
    )
    SELECT l.i, l.term,
      (coalesce(s.df, 0) + coalesce((SELECT sum(d.delta) FROM search_term_deltas d WHERE d.term = l.term), 0))::float8 AS df,
      s.champions_df::float8 AS champions_df, s.champion_floor::float8 AS champion_floor
    FROM lexemes l LEFT JOIN search_terms s ON s.term = l.term
    UNION ALL SELECT -1, '', (SELECT count(*) FROM (SELECT FROM search_written_documents LIMIT 1) w)::float8,
      (SELECT kas_boost_factor(max(boost)) FROM documents WHERE boost > 0)::float8, NULL`.execute(db);
  const lexemes: string[][] = words.map(() => []);
  const terms = new Map<string, TermStats>();
  let chunks = 0;
  let listsBehind = false;
  let maxBoost = 1;
  for (const row of result.rows) {
    if (row.i === -1) {
      listsBehind = row.df > 0;
      maxBoost = Math.max(1, row.champions_df ?? 1);
      continue;
    }
    if (row.i === 0) {
      chunks = row.df;
      continue;
    }
    lexemes[row.i - 1]!.push(row.term);
    terms.set(row.term, {
      term: row.term,
      df: row.df,
      champions_df: row.champions_df,
      champion_floor: row.champion_floor,
    });
  }
  return { chunks, lexemes, terms: [...terms.values()], listsBehind, maxBoost };
}

/**
 * BM25 over the candidate set of a query plan (see bm25.ts): chunks containing a `full` term, plus
 * the champion lists of the frequent terms, each scored over every term of the plan, with access,
 * filters and `must` (phrases, exclusions, `or` groups, as `to_tsquery` text) in the same statement.
 */
export async function bm25Search(
  db: DbExecutor,
  args: {
    plan: QueryPlan;
    must: string | null;
    filters: IndexFilters;
    access: AccessScope;
    limit: number;
    /** Score only this many champion candidates, those the lists alone rank highest (all when absent). */
    scoredChampions?: number;
    /** Return the stored rows too (see `SearchRequest.rows`). */
    rows?: SearchRequest['rows'];
    /** Leave the join order to the planner (the exhaustive fallback, where visibility is selective). */
    plannerJoin?: boolean;
    /** Chunks taken per term without a list (`plan.sampled`). */
    sampledChunks?: number;
    /**
     * Take them reading the table from its start rather than through the index: for terms in a large
     * share of the chunks, the index's bitmap of every chunk holding them costs seconds at 1M chunks.
     */
    sampleByScan?: boolean;
  },
): Promise<SearchHit[]> {
  const { plan } = args;
  if (!plan.scored.length) return [];
  const conditions = documentConditionList(args.filters, args.access);
  // A condition made only of stop words is no condition (an empty tsquery would match nothing).
  const must = args.must
    ? sql`AND (numnode(to_tsquery('english', ${args.must})) = 0 OR c.search_vector @@ to_tsquery('english', ${args.must}))`
    : sql``;
  // The term arrays are stored compressed: each reference to a column would decompress it again, so
  // the lateral subquery decompresses each once per candidate (`|| '{}'` yields a plain copy). A chunk's
  // terms are in byte order (the order of its tsvector's lexemes, see `kas_bm25_weights`), so each query
  // term finds its place by binary search (`width_bucket`, comparing bytes: the "C" collation whatever
  // the database's), then checks the term there is its own: ~7 comparisons instead of `array_position`'s
  // ~45 over a chunk's ~90 terms (five query terms over 20k real-text chunks: 8 → 2.6 µs per candidate,
  // beside ~5 µs for the copy). bm25.test.ts checks the order and the scores under an ICU collation.
  const score = sql.join(
    plan.scored.map(
      (s, i) =>
        sql`${s.idf}::float8 * coalesce(x.weights[CASE WHEN x.terms[${sql.ref(`x.p${i}`)}] = ${s.term}::text THEN ${sql.ref(`x.p${i}`)} END], 0)`,
    ),
    sql` + `,
  );
  const places = sql.join(
    plan.scored.map((s, i) => sql`width_bucket(${s.term}::text COLLATE "C", a.terms) AS ${sql.ref(`p${i}`)}`),
  );
  const arrays = sql`CROSS JOIN LATERAL (
    SELECT a.terms, a.weights, ${places}
    FROM (SELECT c.bm25_terms || '{}'::text[] AS terms, c.bm25_weights || '{}'::real[] AS weights OFFSET 0) a
    OFFSET 0) x`;
  const scored = sql`((${score}) * c.bm25_boost)::float8 AS score`;
  // Access and filters need each candidate's document (the boost is kept on the chunk). Scored
  // candidates stream out best first and each document is looked up by key only until `limit` visible
  // ones are found: for a reader who sees most documents that is a few lookups, for a restrictive
  // scope up to every candidate — never a cut before the conditions apply. The exhaustive fallback
  // (`plannerJoin`, where visibility is selective) leaves the join order to the planner instead.
  const visible = sql.join(conditions, sql` AND `);
  const inArm =
    args.plannerJoin && conditions.length
      ? sql`AND EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id AND ${visible})`
      : sql``;
  // OFFSET 0 keeps this a per-row lookup (not a join that would scan every document).
  const documentCheck =
    !args.plannerJoin && conditions.length
      ? sql`EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id AND ${visible} OFFSET 0)`
      : null;
  const arms = [];
  if (plan.full.length) {
    arms.push(sql`
      SELECT c.document_id, c.chunk_id, ${scored}
      FROM chunks c ${arrays}
      WHERE c.search_vector @@ ${anyLexeme(plan.full)}::tsquery ${must} ${inArm}`);
  }
  if (plan.conjunctive.length) {
    // The GIN index intersects the terms' postings (skipping through the longer ones).
    arms.push(sql`
      SELECT c.document_id, c.chunk_id, ${scored}
      FROM chunks c ${arrays}
      WHERE c.search_vector @@ ${everyLexeme(plan.conjunctive)}::tsquery ${must} ${inArm}`);
  }
  if (plan.sampled.length) {
    // The first chunks the index yields, not the best: approximate until the lists are built.
    arms.push(sql`
      SELECT c.document_id, c.chunk_id, ${scored}
      FROM (
        SELECT c.document_id, c.chunk_id FROM chunks c
        WHERE ${args.sampleByScan ? sql`ts_match_vq(c.search_vector, ${anyLexeme(plan.sampled)}::tsquery)` : sql`c.search_vector @@ ${anyLexeme(plan.sampled)}::tsquery`}
          ${must} ${inArm}
        LIMIT ${args.sampledChunks ?? 1000}
      ) s JOIN chunks c ON c.document_id = s.document_id AND c.chunk_id = s.chunk_id ${arrays}`);
  }
  if (plan.champions.length) {
    // A chunk on several of the query's lists is one candidate (UNION dedupes across the arms only
    // when there are two).
    const terms = plan.champions.map((t) => t.term);
    const idfs = terms.map((term) => plan.scored.find((s) => s.term === term)?.idf ?? 0);
    // Without a cap every candidate is scored; with one, the candidates the lists alone score highest
    // (the sum of idf × weight over the lists a chunk is on) are scored exactly, the rest not at all.
    const listed =
      args.scoredChampions === undefined
        ? sql`SELECT DISTINCT document_id, chunk_id FROM search_champions WHERE term = ANY(${terms}::text[])`
        : sql`SELECT document_id, chunk_id FROM search_champions WHERE term = ANY(${terms}::text[])
            GROUP BY document_id, chunk_id
            ORDER BY sum(weight * (${idfs}::float8[])[array_position(${terms}::text[], term)]) DESC, document_id, chunk_id
            LIMIT ${args.scoredChampions}`;
    arms.push(sql`
      SELECT c.document_id, c.chunk_id, ${scored}
      FROM (${listed}) s
        JOIN chunks c ON c.document_id = s.document_id AND c.chunk_id = s.chunk_id ${arrays}
      WHERE true ${must} ${inArm}`);
  }
  const candidates = sql.join(arms, sql` UNION `);
  // OFFSET 0 keeps the planner from pushing the document check below the sort (back onto every candidate).
  const ranked = documentCheck
    ? sql`
      SELECT document_id, chunk_id, score
      FROM (${candidates} ORDER BY score DESC, document_id, chunk_id OFFSET 0) c
      WHERE ${documentCheck}
      ORDER BY score DESC, document_id, chunk_id
      LIMIT ${args.limit}`
    : sql`
      ${candidates}
      ORDER BY score DESC, document_id, chunk_id
      LIMIT ${args.limit}`;
  if (!args.rows) return (await sql<SearchHit>`${ranked}`.execute(db)).rows;
  return withStoredRows(db, ranked, args.rows);
}

/**
 * Ranked hits with the stored rows the caller reads (every hit's, or each document's best for at most
 * `perDocument` documents), in the same statement: one round trip instead of ranking, then loading.
 */
async function withStoredRows(
  db: DbExecutor,
  ranked: RawBuilder<unknown>,
  rows: NonNullable<SearchRequest['rows']>,
): Promise<SearchHit[]> {
  // Each document's best hit is the first in rank order; it is shown while fewer than `perDocument`
  // documents came before it.
  const shown =
    rows.perDocument === undefined
      ? sql`true`
      : sql`in_document = 1 AND count(*) FILTER (WHERE in_document = 1)
          OVER (ORDER BY position ROWS UNBOUNDED PRECEDING) <= ${rows.perDocument}`;
  // One row holding every hit as JSON text, parsed here with one JSON.parse: PGlite (the index that
  // returns rows) parses each field of each row on its own, which cost more than the statement's own
  // work for 100 hits with their rows (admin search at 100k chunks: ~1 ms of ~8).
  const fields = sql.join(
    STORED_CHUNK_FIELDS.map((field) => sql`${sql.lit(field)}, stored.${sql.ref(field)}`),
  );
  const result = await sql<{ hits: string }>`
    WITH ranked AS MATERIALIZED (${ranked}), numbered AS (
      SELECT document_id, chunk_id, score,
        row_number() OVER (ORDER BY score DESC, document_id, chunk_id) AS position,
        row_number() OVER (PARTITION BY document_id ORDER BY score DESC, chunk_id) AS in_document
      FROM ranked
    ), marked AS (
      SELECT document_id, chunk_id, score, position, ${shown} AS shown FROM numbered
    )
    SELECT coalesce(json_agg(json_build_array(m.document_id, m.chunk_id, m.score,
        CASE WHEN stored.document_id IS NULL THEN NULL ELSE json_build_object(${fields}) END)
      ORDER BY m.position), '[]')::text AS hits
    FROM marked m
      LEFT JOIN LATERAL (
        SELECT ${STORED_CHUNK_COLUMNS}
        FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE m.shown AND c.document_id = m.document_id AND c.chunk_id = m.chunk_id
        OFFSET 0
      ) stored ON true`.execute(db);
  type StoredJson = Omit<StoredChunk, 'document_id' | 'chunk_id' | 'updated_at'> & {
    updated_at: string | null;
  };
  const hits = JSON.parse(result.rows[0]!.hits) as [string, number, number, StoredJson | null][];
  return hits.map(([document_id, chunk_id, score, stored]) =>
    stored
      ? {
          document_id,
          chunk_id,
          score,
          row: {
            document_id,
            chunk_id,
            ...stored,
            // As the driver gives timestamps (JSON has them as text).
            updated_at: (stored.updated_at === null ? null : new Date(stored.updated_at)) as Date,
          },
        }
      : { document_id, chunk_id, score },
  );
}

/**
 * Exhaustive BM25 over every chunk that contains one of the plan's terms: what a restrictive access
 * scope or filter falls back to when the candidate set left fewer than `limit` visible chunks.
 */
export async function bm25SearchAll(
  db: DbExecutor,
  args: {
    plan: QueryPlan;
    must: string | null;
    filters: IndexFilters;
    access: AccessScope;
    limit: number;
  },
): Promise<SearchHit[]> {
  const plan = {
    ...args.plan,
    full: args.plan.scored.map((s) => s.term),
    champions: [],
    conjunctive: [],
    sampled: [],
  };
  return bm25Search(db, { ...args, plan, plannerJoin: true });
}

/**
 * Which chunks are copies of one passage for champion lists (`PlanLimits.copies`): the same title and
 * text (a 64-bit hash). Computed where a list is built, ~5 µs per chunk read there: a stored column
 * would cost every inserted chunk, and adding one rewrites the table and rebuilds its indexes.
 */
const CONTENT_KEY = sql`hashtextextended(c.title || E'\n' || c.content, 0)`;

/**
 * Rebuilds a term's champion list: its `size` highest-weighted chunks, at most `copies` of one passage
 * (the best of them by weight, then key); returns the list's floor. With
 * `postings`, a provisional list from at most that many of the term's chunks (a bounded statement),
 * recorded as built at a frequency of 0 so that maintenance replaces it with the real one. With
 * `ifFree`, returns undefined at once, building nothing, when another build holds the list (a pass
 * over many terms holds theirs while it writes them: a search should not wait for that).
 */
export async function buildChampions(
  db: DbExecutor,
  term: string,
  df: number,
  size: number,
  options: { postings?: number; ifFree?: boolean; copies?: number } = {},
): Promise<number | null | undefined> {
  const postings =
    options.postings === undefined
      ? sql`chunks c WHERE c.search_vector @@ ${anyLexeme([term])}::tsquery`
      : sql`(SELECT c.document_id, c.chunk_id, c.title, c.content, c.bm25_terms, c.bm25_weights FROM chunks c
          WHERE c.search_vector @@ ${anyLexeme([term])}::tsquery LIMIT ${options.postings}) c`;
  const copies = options.copies ?? DEFAULT_PLAN_LIMITS.copies;
  const builtAt = options.postings === undefined ? df : 0;
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock_shared(${LISTS_LOCK})`.execute(trx);
    // The term's statistics row first, as the pass over many terms takes them (buildChampionsTogether):
    // two builds of one list then wait for each other instead of deadlocking.
    if (options.ifFree) {
      const free = await sql`SELECT 1 FROM search_terms WHERE term = ${term} FOR UPDATE SKIP LOCKED`.execute(
        trx,
      );
      if (!free.rows.length) {
        const known = await sql`SELECT 1 FROM search_terms WHERE term = ${term}`.execute(trx);
        if (known.rows.length) return undefined;
      }
    } else await sql`SELECT 1 FROM search_terms WHERE term = ${term} FOR UPDATE`.execute(trx);
    await sql`DELETE FROM search_champions WHERE term = ${term}`.execute(trx);
    const inserted = await sql<{ weight: number }>`
      INSERT INTO search_champions (term, document_id, chunk_id, weight)
      SELECT ${term}, p.document_id, p.chunk_id, p.weight
      FROM (
        SELECT p.*, row_number() OVER (PARTITION BY p.content_key ORDER BY p.weight DESC, p.document_id, p.chunk_id) AS copy
        FROM (
          SELECT c.document_id, c.chunk_id, c.bm25_weights[array_position(c.bm25_terms, ${term}::text)] AS weight,
            ${CONTENT_KEY} AS content_key
          FROM ${postings}
        ) p
      ) p
      WHERE p.copy <= ${copies}
      ORDER BY p.weight DESC, p.document_id, p.chunk_id LIMIT ${size}
      ON CONFLICT DO NOTHING
      RETURNING weight::float8 AS weight`.execute(trx);
    const floor = inserted.rows.length < size ? 0 : Math.min(...inserted.rows.map((r) => r.weight));
    await sql`
      INSERT INTO search_terms (term, df, champions_df, champion_floor) VALUES (${term}, 0, ${builtAt}, ${floor})
      ON CONFLICT (term) DO UPDATE SET champions_df = excluded.champions_df, champion_floor = excluded.champion_floor`.execute(
      trx,
    );
    return floor;
  });
}

/**
 * Rebuilds the champion lists of many terms in one pass over the chunks (after a bulk load most
 * frequent terms need a new list, and one index scan per term reads each posting's chunk row again
 * for every such term: ~20 minutes at 1M chunks). The chunks are read in ranges of pages; each range
 * adds, per term, its best chunks above the term's current floor (the lowest weight on a full list) to
 * a working table, which is then cut back to each term's `size`. Floors rise quickly, so after the first
 * ranges few rows pass. Everything happens in one transaction: searches keep the previous lists until
 * the new ones replace them at once. Returns each term's floor (0 when it has fewer than `size` chunks).
 *
 * As a single list's build, a list holds at most `copies` chunks of one passage (same title and text).
 * Ranges and cuts keep each term's best chunks, passing over those beyond the `copies`-th of their
 * passage, so a term's `size`-th weight so far still only rises (the best such list of more postings
 * is at least as good, place by place) and stays a lower bound of its floor. The copies of a listed
 * passage weigh more than the floor, so each cut also records, per term and passage with `copies` kept,
 * the last of them by weight, then key (its bar): a later copy ranked after it cannot be listed and is
 * passed over like a posting below the floor (without that, a corpus of 265 copies of each passage
 * staged ~26 times the lists' rows).
 */
export async function buildChampionsTogether(
  db: Kysely<Database>,
  terms: { term: string; df: number; size: number }[],
  options: { firstPages?: number; maxPages?: number; copies?: number } = {},
): Promise<Map<string, number>> {
  const copies = options.copies ?? DEFAULT_PLAN_LIMITS.copies;
  const floors = new Map<string, number>(terms.map((t) => [t.term, 0]));
  if (!terms.length) return floors;
  // Ranges start small and double: the first ones pass every posting (no floor yet), later ones few.
  let pagesPerRange = options.firstPages ?? 50;
  const maxPages = options.maxPages ?? 4000;
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock_shared(${LISTS_LOCK})`.execute(trx);
    // Postings are joined to the terms' floors by hashing: estimated from a small range of pages, a
    // nested loop would scan the range once per term.
    await sql`SET LOCAL enable_nestloop = off`.execute(trx);
    // A range's postings are ranked per term in memory rather than sorted on disk (the default 4 MB
    // spills from the first ranges on, where no floor filters yet).
    await sql`SET LOCAL work_mem = '128MB'`.execute(trx);
    await sql`CREATE TEMP TABLE kas_champions_next (term text NOT NULL, document_id text NOT NULL,
      chunk_id integer NOT NULL, weight real NOT NULL, content_key bigint NOT NULL) ON COMMIT DROP`.execute(
      trx,
    );
    await sql`CREATE TEMP TABLE kas_champion_bars (term text NOT NULL, content_key bigint NOT NULL,
      weight real NOT NULL, document_id text NOT NULL, chunk_id integer NOT NULL) ON COMMIT DROP`.execute(
      trx,
    );
    const pages = Number(
      (
        await sql<{ pages: number }>`
          SELECT (pg_relation_size('chunks') / current_setting('block_size')::int)::int AS pages`.execute(trx)
      ).rows[0]!.pages,
    );
    const names = terms.map((t) => t.term);
    const sizes = terms.map((t) => t.size);
    const total = sizes.reduce((a, b) => a + b, 0);
    const sizeOf = new Map(terms.map((t) => [t.term, t.size]));
    const lowestFloor = () => {
      let lowest = Number.POSITIVE_INFINITY;
      for (const floor of floors.values()) lowest = Math.min(lowest, floor);
      return lowest;
    };
    let staged = 0;
    // Every term back to its best `size`, at most `copies` of a passage; returns how many rows are left.
    const cut = async () => {
      await sql`
        WITH sizes AS (SELECT * FROM unnest(${names}::text[], ${sizes}::int[]) AS z(term, size)),
        copied AS (
          SELECT ctid AS row_id, term, weight, document_id, chunk_id,
            row_number() OVER (PARTITION BY term, content_key ORDER BY weight DESC, document_id, chunk_id) <= ${copies} AS kept
          FROM kas_champions_next
        ),
        ranked AS (
          SELECT row_id, term, kept,
            row_number() OVER (PARTITION BY term, kept ORDER BY weight DESC, document_id, chunk_id) AS r
          FROM copied
        )
        DELETE FROM kas_champions_next n USING ranked x JOIN sizes z ON z.term = x.term
        WHERE (NOT x.kept OR x.r > z.size) AND n.ctid = x.row_id`.execute(trx);
      // The passages with `copies` kept: a later copy ranked after the last of them (by weight, then
      // key) is passed over. Copies weighted with the same averages tie (migration 0035): a bar by
      // weight alone passed every copy of a passage, 265 of each in the benchmark's corpus.
      await sql`TRUNCATE kas_champion_bars`.execute(trx);
      await sql`
        INSERT INTO kas_champion_bars
        SELECT DISTINCT ON (term, content_key) term, content_key, weight, document_id, chunk_id
        FROM kas_champions_next
        WHERE (term, content_key) IN (
          SELECT term, content_key FROM kas_champions_next GROUP BY term, content_key HAVING count(*) >= ${copies})
        ORDER BY term, content_key, weight, document_id DESC, chunk_id DESC`.execute(trx);
      await sql`ANALYZE kas_champion_bars`.execute(trx);
      // A term with `size` rows kept has its floor so far: most terms never reach `size` postings in
      // one range (a term in 0.1 % of 1M chunks has ~12 in the largest), so their floors rise here.
      const kept = await sql<{ term: string; n: number; weight: number }>`
        SELECT term, count(*)::float8 AS n, min(weight)::float8 AS weight FROM kas_champions_next GROUP BY term`.execute(
        trx,
      );
      let left = 0;
      for (const row of kept.rows) {
        left += row.n;
        if (row.n >= sizeOf.get(row.term)! && row.weight > floors.get(row.term)!)
          floors.set(row.term, row.weight);
      }
      return left;
    };
    for (
      let first = 0;
      first < pages;
      first += pagesPerRange, pagesPerRange = Math.min(2 * pagesPerRange, maxPages)
    ) {
      // The last range is open: it also takes the pages the table grew by since `pages` was read.
      const last = first + pagesPerRange >= pages ? null : first + pagesPerRange;
      // The range's best `size` per term above its floor (at most `copies` of a passage, none below
      // the passage's bar) are kept; the `size`-th of them is a lower bound of the term's final floor
      // (the best `size` overall are at least as good). The lowest floor first, a comparison instead
      // of a lookup: most postings are single occurrences below it. Each chunk's passage key is
      // computed once (OFFSET 0: not once per posting).
      const range = await sql<{ term: string | null; weight: number }>`
        WITH floors AS (
          SELECT * FROM unnest(${names}::text[], ${names.map((t) => floors.get(t)!)}::real[], ${sizes}::int[]) AS f(term, floor, size)
        ), passed AS (
          SELECT u.term, c.document_id, c.chunk_id, u.weight, f.size, c.content_key
          FROM (
            SELECT c.document_id, c.chunk_id, c.bm25_terms, c.bm25_weights, ${CONTENT_KEY} AS content_key
            FROM chunks c
            WHERE c.ctid >= ${`(${first},0)`}::tid ${last === null ? sql`` : sql`AND c.ctid < ${`(${last},0)`}::tid`}
            OFFSET 0
          ) c, unnest(c.bm25_terms, c.bm25_weights) AS u(term, weight), floors f
          WHERE u.weight > ${lowestFloor()}::real AND f.term = u.term AND u.weight > f.floor
            AND NOT EXISTS (SELECT 1 FROM kas_champion_bars b
              WHERE b.term = u.term AND b.content_key = c.content_key
                AND (b.weight > u.weight OR (b.weight = u.weight
                  AND (b.document_id, b.chunk_id) < (c.document_id, c.chunk_id))))
        ), copied AS (
          SELECT *, row_number() OVER (PARTITION BY term, content_key ORDER BY weight DESC, document_id, chunk_id) AS copy
          FROM passed
        ), postings AS (
          SELECT *, row_number() OVER (PARTITION BY term ORDER BY weight DESC, document_id, chunk_id) AS r
          FROM copied WHERE copy <= ${copies}
        ), added AS (
          INSERT INTO kas_champions_next
          SELECT term, document_id, chunk_id, weight, content_key FROM postings WHERE r <= size
          RETURNING 1
        )
        SELECT NULL AS term, count(*)::float8 AS weight FROM added
        UNION ALL SELECT term, weight::float8 FROM postings WHERE r = size`.execute(trx);
      for (const row of range.rows) {
        if (row.term === null) staged += row.weight;
        else if (row.weight > floors.get(row.term)!) floors.set(row.term, row.weight);
      }
      if (staged > 2 * total) staged = await cut();
    }
    await cut();
    // Exact floors now: the `size`-th weight of a full list, 0 for a shorter one.
    for (const name of names) floors.set(name, 0);
    const full = await sql<{ term: string; weight: number }>`
      SELECT n.term, min(n.weight)::float8 AS weight
      FROM kas_champions_next n JOIN unnest(${names}::text[], ${sizes}::int[]) AS z(term, size) ON z.term = n.term
      GROUP BY n.term, z.size HAVING count(*) >= z.size`.execute(trx);
    for (const row of full.rows) floors.set(row.term, row.weight);
    // The terms' statistics rows first, in one order (as a single list's build takes its own): a search
    // building a missing list meanwhile waits for these instead of deadlocking with them.
    await sql`SELECT 1 FROM search_terms WHERE term = ANY(${names}::text[]) ORDER BY term FOR UPDATE`.execute(
      trx,
    );
    await sql`DELETE FROM search_champions WHERE term = ANY(${names}::text[])`.execute(trx);
    // Rows of chunks deleted meanwhile are left out (the insert checks each chunk still exists).
    await sql`
      INSERT INTO search_champions (term, document_id, chunk_id, weight)
      SELECT n.term, n.document_id, n.chunk_id, n.weight FROM kas_champions_next n
      WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = n.document_id AND c.chunk_id = n.chunk_id)
      ON CONFLICT DO NOTHING`.execute(trx);
    await sql`
      INSERT INTO search_terms (term, df, champions_df, champion_floor)
      SELECT term, 0, df, floor FROM unnest(${names}::text[], ${terms.map((t) => t.df)}::bigint[],
        ${names.map((t) => floors.get(t)!)}::real[]) AS u(term, df, floor)
      ORDER BY term
      ON CONFLICT (term) DO UPDATE SET champions_df = excluded.champions_df, champion_floor = excluded.champion_floor`.execute(
      trx,
    );
    return floors;
  });
}

/** A chunk's weight for a term, as a champion list holds it. */
interface Posting {
  weight: number;
  document_id: string;
  chunk_id: number;
}

/** A posting kept by `buildChampionsInSteps`, with its passage (`CONTENT_KEY`, as text). */
interface KeptPosting extends Posting {
  key: string;
  /** `copies` better copies of its passage are kept: it will not be listed. */
  dropped?: boolean;
}

/**
 * Strings in the order of their UTF-8 bytes (the embedded database's collation, C): JavaScript's own
 * order compares UTF-16 units, which differs where a character beyond U+FFFF (two units, the first
 * in D800–DFFF) meets one in E000–FFFF.
 */
function compareBytes(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const surrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
    return (surrogate(x) ? x + 0x10000 : x) - (surrogate(y) ? y + 0x10000 : y);
  }
  return a.length - b.length;
}

/** Best first, ties broken by key (as lists are built and searches rank, keys byte by byte). */
function byWeight(a: Posting, b: Posting): number {
  return b.weight - a.weight || compareBytes(a.document_id, b.document_id) || a.chunk_id - b.chunk_id;
}

/**
 * The embedded database's `buildChampionsTogether`: the same pass over the chunks in ranges of pages,
 * but each range is its own short statement and the best postings so far are kept here, not in a
 * working table of one long transaction (the embedded database has one connection: a statement or
 * transaction holds it, and every request waits for it). Ranges are sized so that a statement takes
 * about `stepMs`; floors are the exact `size`-th best so far, so after the first ranges few postings
 * are kept. The new lists then replace the old ones a few terms per transaction (searches meanwhile
 * read a term's old list or its new one, never half of one). As a single list's build, a list holds at
 * most `copies` chunks of one passage, the best of them: a posting above its term's floor is also
 * passed over when `copies` better ones of its passage are kept. Returns each term's floor (0 when it has fewer than `size` chunks), or
 * null when `stop()` said to stop before the end (nothing written).
 */
export async function buildChampionsInSteps(
  db: Kysely<Database>,
  terms: { term: string; df: number; size: number }[],
  options: {
    stepMs?: number;
    firstPages?: number;
    termsPerWrite?: number;
    stop?: () => boolean;
    copies?: number;
  } = {},
): Promise<Map<string, number> | null> {
  const copies = options.copies ?? DEFAULT_PLAN_LIMITS.copies;
  const stepMs = options.stepMs ?? 50;
  const names = terms.map((t) => t.term);
  /**
   * Per term, its postings kept (some dropped since), the best copies kept of each passage (at most
   * `copies`, best first), and the list's length after its last trim.
   */
  const best = new Map<
    string,
    { list: KeptPosting[]; passages: Map<string, KeptPosting[]>; trimmed: number }
  >(names.map((t) => [t, { list: [], passages: new Map(), trimmed: 0 }]));
  const floors = new Map<string, number>(names.map((t) => [t, 0]));
  if (!terms.length) return floors;
  /**
   * Each term's `size`-th best so far (a posting passes only if it ranks before it: ties on the weight
   * broken by key, as a single list's build and exhaustive ranking break them, so that the lists are
   * theirs exactly); none until it has `size`.
   */
  const last = new Map<string, Posting>();
  const sizeOf = new Map(terms.map((t) => [t.term, t.size]));
  // A term's postings back to its best `size` (the dropped left out), whose last is then its floor: it
  // only rises as postings are added (the best list of more postings, at most `copies` of a passage,
  // is at least as good place by place). The copies of a passage cut here rank after that floor: a
  // later copy that passes the floor ranks before them, so they need not be remembered.
  const trim = (term: string) => {
    const staged = best.get(term)!;
    const size = sizeOf.get(term)!;
    const list = staged.list.filter((p) => !p.dropped).sort(byWeight);
    list.length = Math.min(list.length, size);
    staged.list = list;
    staged.trimmed = list.length;
    staged.passages.clear();
    for (const posting of list) {
      const kept = staged.passages.get(posting.key);
      if (kept) kept.push(posting);
      else staged.passages.set(posting.key, [posting]);
    }
    if (list.length === size) last.set(term, list[size - 1]!);
  };
  const pages = Number(
    (
      await sql<{ pages: number }>`
        SELECT (pg_relation_size('chunks') / current_setting('block_size')::int)::int AS pages`.execute(db)
    ).rows[0]!.pages,
  );
  let pagesPerStep = options.firstPages ?? 8;
  for (let first = 0; first < pages; ) {
    if (options.stop?.()) return null;
    // The last range is open: it also takes the pages the table grew by since `pages` was read.
    const end = first + pagesPerStep >= pages ? null : first + pagesPerStep;
    const started = performance.now();
    // The range's chunks with their terms and weights, as one row of JSON text (the embedded database
    // hands each field of each row over on its own), compared with the floors here: joining every
    // posting to the floors in the database (unnest, join, filter) cost ~5 times reading the arrays
    // (~1.5 ms per chunk at 100k chunks on a loaded machine, most of the maintenance after a load).
    const result = await sql<{ chunks: string }>`
      SELECT coalesce(json_agg(json_build_array(c.document_id, c.chunk_id, c.bm25_terms, c.bm25_weights,
        ${CONTENT_KEY}::text)), '[]')::text AS chunks
      FROM chunks c
      WHERE c.ctid >= ${`(${first},0)`}::tid ${end === null ? sql`` : sql`AND c.ctid < ${`(${end},0)`}::tid`}`.execute(
      db,
    );
    const chunks = JSON.parse(result.rows[0]!.chunks) as [string, number, string[], number[], string][];
    const touched = new Set<string>();
    for (const [document_id, chunk_id, chunkTerms, weights, key] of chunks) {
      for (let i = 0; i < chunkTerms.length; i++) {
        const term = chunkTerms[i]!;
        const staged = best.get(term);
        if (!staged) continue;
        const weight = weights[i]!;
        const bar = last.get(term);
        // Most postings rank after their term's floor: passed over without making an object.
        if (
          bar &&
          (weight < bar.weight ||
            (weight === bar.weight &&
              (compareBytes(document_id, bar.document_id) || chunk_id - bar.chunk_id) >= 0))
        )
          continue;
        const posting: KeptPosting = { weight, document_id, chunk_id, key };
        // Passed over when `copies` better copies of its passage are kept; else it takes the place of
        // the worst of them, if there are `copies`.
        const kept = staged.passages.get(key);
        if (kept) {
          if (kept.length >= copies && byWeight(posting, kept[kept.length - 1]!) > 0) continue;
          let at = kept.length;
          while (at > 0 && byWeight(posting, kept[at - 1]!) < 0) at--;
          kept.splice(at, 0, posting);
          if (kept.length > copies) kept.pop()!.dropped = true;
        } else staged.passages.set(key, [posting]);
        staged.list.push(posting);
        touched.add(term);
      }
    }
    for (const term of touched) {
      const { list, trimmed } = best.get(term)!;
      // A first floor as soon as there are `size`; then trimmed each time the list doubles.
      if (list.length >= Math.max(sizeOf.get(term)!, 2 * trimmed)) trim(term);
    }
    if (end === null) break;
    first = end;
    // The next range sized by how long this one took (at most doubled or halved).
    const ms = Math.max(performance.now() - started, 1);
    pagesPerStep = Math.max(1, Math.round(pagesPerStep * Math.min(2, Math.max(0.5, stepMs / ms))));
  }
  for (const term of names) {
    trim(term);
    const { list } = best.get(term)!;
    const size = sizeOf.get(term)!;
    floors.set(term, list.length < size ? 0 : list[size - 1]!.weight);
  }
  // ~1,200 rows per transaction: writing a list costs ~0.2 ms per row (its keys, the chunk's existence),
  // and 6,000 rows took 1–2 s at 200k chunks on a loaded machine.
  const sorted = [...names].sort();
  const dfOf = new Map(terms.map((t) => [t.term, t.df]));
  for (let i = 0; i < sorted.length; ) {
    if (options.stop?.()) return null;
    let end = i + 1;
    if (options.termsPerWrite) end = i + options.termsPerWrite;
    else
      for (let rows = sizeOf.get(sorted[i]!)!; end < sorted.length; end++) {
        rows += sizeOf.get(sorted[end]!)!;
        if (rows > 1200) break;
      }
    const group = sorted.slice(i, end);
    i = end;
    const rows = group.flatMap((term) =>
      best
        .get(term)!
        .list.map(({ weight, document_id, chunk_id }) => ({ term, weight, document_id, chunk_id })),
    );
    await db.transaction().execute(async (trx) => {
      // The terms' statistics rows first, in one order (as a single list's build takes its own).
      await sql`SELECT 1 FROM search_terms WHERE term = ANY(${group}::text[]) ORDER BY term FOR UPDATE`.execute(
        trx,
      );
      await sql`DELETE FROM search_champions WHERE term = ANY(${group}::text[])`.execute(trx);
      // Rows of chunks deleted meanwhile are left out.
      await sql`
        INSERT INTO search_champions (term, document_id, chunk_id, weight)
        SELECT n.term, n.document_id, n.chunk_id, n.weight
        FROM unnest(${rows.map((r) => r.term)}::text[], ${rows.map((r) => r.document_id)}::text[],
          ${rows.map((r) => r.chunk_id)}::int[], ${rows.map((r) => r.weight)}::real[]) AS n(term, document_id, chunk_id, weight)
        WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = n.document_id AND c.chunk_id = n.chunk_id)
        ON CONFLICT DO NOTHING`.execute(trx);
      await sql`
        INSERT INTO search_terms (term, df, champions_df, champion_floor)
        SELECT term, 0, df, floor FROM unnest(${group}::text[], ${group.map((t) => dfOf.get(t)!)}::bigint[],
          ${group.map((t) => floors.get(t)!)}::real[]) AS u(term, df, floor)
        ORDER BY term
        ON CONFLICT (term) DO UPDATE SET champions_df = excluded.champions_df, champion_floor = excluded.champion_floor`.execute(
        trx,
      );
    });
  }
  return floors;
}

/**
 * Folds the pending document-frequency deltas into `search_terms` (at most `limit` of them, in one
 * statement; all without it); returns how many were folded. Frequencies of zero are dropped unless
 * `keepZeros` (a scan of every term, left to a quiet moment on the embedded database).
 */
export async function foldTermDeltas(
  db: DbExecutor,
  options: { limit?: number; keepZeros?: boolean } = {},
): Promise<number> {
  const moved =
    options.limit === undefined
      ? sql`DELETE FROM search_term_deltas`
      : sql`DELETE FROM search_term_deltas
          WHERE ctid = ANY(ARRAY(SELECT ctid FROM search_term_deltas LIMIT ${options.limit}))`;
  // The chunks counted by this fold were weighted with the average lengths in effect until now (the
  // recorded pair, else the folded ones, or the defaults below 20 chunks, as kas_bm25_weights computes
  // them): their sum is kept, so that maintenance knows the averages the stored weights hold without
  // re-weighting (tracked from an empty index, or from the last re-weighting).
  const result = await sql<{ folded: number }>`
    WITH moved AS (${moved} RETURNING term, delta),
    sums AS (SELECT term, sum(delta) AS delta, count(*) AS n FROM moved GROUP BY term),
    before AS (
      SELECT coalesce((SELECT df FROM search_terms WHERE term = ${CHUNK_COUNT_KEY}), 0) AS n,
        coalesce((SELECT df FROM search_terms WHERE term = ${LENGTH_KEY}), 0) AS len,
        coalesce((SELECT df FROM search_terms WHERE term = ${TITLE_LENGTH_KEY}), 0) AS tlen,
        (SELECT df FROM search_terms WHERE term = ${WEIGHTED_LENGTH_KEY}) AS wlen,
        (SELECT df FROM search_terms WHERE term = ${WEIGHTED_TITLE_LENGTH_KEY}) AS wtlen,
        EXISTS (SELECT 1 FROM search_terms WHERE term = ${WEIGHTED_LENGTH_SUM_KEY}) AS tracked
    ),
    used AS (
      SELECT n, tracked,
        CASE WHEN wlen IS NOT NULL THEN greatest(wlen::float8 / 1000, 1)
          WHEN n >= 20 THEN greatest(len::float8 / n, 1) ELSE 120 END AS len,
        CASE WHEN wtlen IS NOT NULL THEN greatest(wtlen::float8 / 1000, 1)
          WHEN n >= 20 THEN greatest(tlen::float8 / n, 1) ELSE 6 END AS tlen
      FROM before
    ),
    weighted AS (
      SELECT ${WEIGHTED_LENGTH_SUM_KEY}::text AS term, round(s.delta * u.len * 1000)::bigint AS delta
      FROM used u JOIN sums s ON s.term = ${CHUNK_COUNT_KEY} WHERE u.tracked OR u.n = 0
      UNION ALL
      SELECT ${WEIGHTED_TITLE_LENGTH_SUM_KEY}::text, round(s.delta * u.tlen * 1000)::bigint
      FROM used u JOIN sums s ON s.term = ${CHUNK_COUNT_KEY} WHERE u.tracked OR u.n = 0
      UNION ALL
      SELECT ${WEIGHTED_LENGTH_SQUARES_KEY}::text, round(s.delta * u.len ^ 2)::bigint
      FROM used u JOIN sums s ON s.term = ${CHUNK_COUNT_KEY} WHERE u.tracked OR u.n = 0
      UNION ALL
      SELECT ${WEIGHTED_TITLE_LENGTH_SQUARES_KEY}::text, round(s.delta * u.tlen ^ 2)::bigint
      FROM used u JOIN sums s ON s.term = ${CHUNK_COUNT_KEY} WHERE u.tracked OR u.n = 0
    ),
    upserted AS (
      INSERT INTO search_terms (term, df)
      SELECT term, delta FROM (SELECT term, delta FROM sums UNION ALL SELECT term, delta FROM weighted) x ORDER BY term
      ON CONFLICT (term) DO UPDATE SET df = search_terms.df + excluded.df
    )
    SELECT coalesce(sum(n), 0)::int AS folded FROM sums`.execute(db);
  if (!options.keepZeros) await dropZeroFrequencies(db);
  return result.rows[0]?.folded ?? 0;
}

/** Drops the statistics of terms no chunk holds any more. */
export async function dropZeroFrequencies(db: DbExecutor): Promise<void> {
  await sql`DELETE FROM search_terms WHERE df <= 0 AND term NOT LIKE ${RESERVED_KEYS}`.execute(db);
}

export interface LengthStatistics {
  chunks: number;
  /** Average content and title lengths now. */
  length: number;
  titleLength: number;
  /**
   * The mean of the averages the stored weights hold (where the sums are kept; else those they were
   * last recomputed with, null: never).
   */
  weightedLength: number | null;
  weightedTitleLength: number | null;
  /**
   * How far the averages the chunks were weighted with spread around today's: the root mean square
   * of their differences, relative to today's averages (null where the sums are not kept).
   */
  lengthDeviation: number | null;
  titleLengthDeviation: number | null;
  /** Whether a pair of averages is recorded for new chunks (`recordWeightedLengths`). */
  recorded: boolean;
  /** Whether every chunk was ever re-weighted (by maintenance or a rebuild). */
  reweighted: boolean;
}

export async function lengthStatistics(db: DbExecutor): Promise<LengthStatistics> {
  const result = await sql<{ term: string; df: number }>`
    SELECT term, df::float8 AS df FROM search_terms
    WHERE term IN (${CHUNK_COUNT_KEY}, ${LENGTH_KEY}, ${TITLE_LENGTH_KEY}, ${WEIGHTED_LENGTH_KEY},
      ${WEIGHTED_TITLE_LENGTH_KEY}, ${RECORDED_ONLY_KEY}, ${WEIGHTED_LENGTH_SUM_KEY}, ${WEIGHTED_TITLE_LENGTH_SUM_KEY},
      ${WEIGHTED_LENGTH_SQUARES_KEY}, ${WEIGHTED_TITLE_LENGTH_SQUARES_KEY})`.execute(db);
  const value = new Map(result.rows.map((r) => [r.term, r.df]));
  const chunks = value.get(CHUNK_COUNT_KEY) ?? 0;
  const per = (key: string) => (chunks > 0 ? (value.get(key) ?? 0) / chunks : 0);
  // The mean of the averages the chunks were weighted with where the sums are kept; else (a database
  // from before them) the averages of the last re-weighting.
  const weighted = (sumKey: string, key: string) =>
    value.has(sumKey) && chunks > 0
      ? value.get(sumKey)! / 1000 / chunks
      : value.has(key)
        ? value.get(key)! / 1000
        : null;
  // The root mean square of (average a chunk was weighted with − today's average), relative to today's.
  const deviation = (sumKey: string, squaresKey: string, now: number) => {
    if (!value.has(sumKey) || !value.has(squaresKey) || chunks <= 0 || now <= 0) return null;
    const mean = value.get(sumKey)! / 1000 / chunks;
    const meanSquare = value.get(squaresKey)! / chunks;
    return Math.sqrt(Math.max(meanSquare - 2 * now * mean + now * now, 0)) / now;
  };
  const length = per(LENGTH_KEY);
  const titleLength = per(TITLE_LENGTH_KEY);
  return {
    chunks,
    length,
    titleLength,
    weightedLength: weighted(WEIGHTED_LENGTH_SUM_KEY, WEIGHTED_LENGTH_KEY),
    weightedTitleLength: weighted(WEIGHTED_TITLE_LENGTH_SUM_KEY, WEIGHTED_TITLE_LENGTH_KEY),
    lengthDeviation: deviation(WEIGHTED_LENGTH_SUM_KEY, WEIGHTED_LENGTH_SQUARES_KEY, length),
    titleLengthDeviation: deviation(
      WEIGHTED_TITLE_LENGTH_SUM_KEY,
      WEIGHTED_TITLE_LENGTH_SQUARES_KEY,
      titleLength,
    ),
    recorded: value.has(WEIGHTED_LENGTH_KEY),
    reweighted: value.has(WEIGHTED_LENGTH_KEY) && !value.has(RECORDED_ONLY_KEY),
  };
}

/** The relative spread that makes maintenance re-weight every chunk when it never has (see below). */
const FIRST_REWEIGHT_DRIFT = 0.05;

/**
 * Whether the stored weights are too far from today's average lengths: the averages the chunks were
 * weighted with are off by more than `drift` (relative, root mean square), or, where that is not kept,
 * the averages of the last re-weighting are (or there was none).
 */
export function weightsDrifted(stats: LengthStatistics, drift: number): boolean {
  // Until a first re-weighting, a closer bound: the chunks of a load's first seconds hold the defaults.
  const bound = stats.reweighted ? drift : Math.min(drift, FIRST_REWEIGHT_DRIFT);
  const off = (deviation: number | null, now: number, then: number | null) =>
    deviation !== null
      ? deviation > bound
      : then === null || Math.abs(now - then) > drift * Math.max(then, 1);
  return (
    off(stats.lengthDeviation, stats.length, stats.weightedLength) ||
    off(stats.titleLengthDeviation, stats.titleLength, stats.weightedTitleLength)
  );
}

/**
 * Records the average lengths every chunk written from now on is weighted with (kas_bm25_weights,
 * migration 0035), the chunks counted so far keeping theirs (close to these: not drifted). A mark says
 * no chunk was re-weighted with them, so that the first-time drift bound still applies.
 */
export async function recordWeightedLengths(
  db: DbExecutor,
  length: number,
  titleLength: number,
): Promise<void> {
  await sql`
    INSERT INTO search_terms (term, df)
    VALUES (${WEIGHTED_LENGTH_KEY}, ${Math.round(length * 1000)}),
      (${WEIGHTED_TITLE_LENGTH_KEY}, ${Math.round(titleLength * 1000)}), (${RECORDED_ONLY_KEY}, 1)
    ON CONFLICT (term) DO UPDATE SET df = excluded.df`.execute(db);
}

/**
 * Records the average lengths as `recordWeightedLengths` does, for a re-weighting of every chunk
 * counted so far (`reweightChunks` follows): the sums the deviation is computed from start again from
 * them, as if every chunk held them already. Returns the transaction id from which on every chunk
 * written holds them, when no transaction was writing chunks: the recording then takes a share lock on
 * the table and holds it until it commits, so that a chunk written by a transaction with a later id was
 * weighted by a statement that saw it (a statement's snapshot is taken after its locks). Undefined while
 * one writes (Postgres, during ingestion): it does not wait for the lock, and every chunk is walked
 * instead. The embedded database runs maintenance between transactions, so there it always returns the id.
 * The recording's statements never queue for a background turn (db/statement-gate.ts): writers that
 * came after the lock wait for it holding their turns, and a turn awaited then came only after the
 * gate's 2 s bound, each statement (the batch benchmark's load stalled 4–6 s).
 */
export async function recordLengthsForReweighting(
  db: Kysely<Database>,
  length: number,
  titleLength: number,
): Promise<string | undefined> {
  try {
    return await outsideBackground(() =>
      db.transaction().execute(async (trx) => {
        await recordLengths(trx, length, titleLength);
        // Taken last, so that writers wait for it as briefly as possible.
        await sql`LOCK TABLE chunks IN SHARE MODE NOWAIT`.execute(trx);
        // The next id to be assigned, as a 32-bit `xid` (what a row's `xmin` is).
        const next = await sql<{ xid: string }>`
          SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296)::text AS xid`.execute(
          trx,
        );
        return next.rows[0]!.xid;
      }),
    );
  } catch (error) {
    if (!isLockNotAvailable(error)) throw error;
    await db.transaction().execute((trx) => recordLengths(trx, length, titleLength));
    return undefined;
  }
}

async function recordLengths(db: DbExecutor, length: number, titleLength: number): Promise<void> {
  await sql`DELETE FROM search_terms WHERE term = ${RECORDED_ONLY_KEY}`.execute(db);
  await sql`
    WITH n AS (SELECT coalesce((SELECT df FROM search_terms WHERE term = ${CHUNK_COUNT_KEY}), 0) AS n)
    INSERT INTO search_terms (term, df)
    SELECT ${WEIGHTED_LENGTH_KEY}::text, ${Math.round(length * 1000)}::bigint
    UNION ALL SELECT ${WEIGHTED_TITLE_LENGTH_KEY}::text, ${Math.round(titleLength * 1000)}::bigint
    UNION ALL SELECT ${WEIGHTED_LENGTH_SUM_KEY}::text, n.n * ${Math.round(length * 1000)}::bigint FROM n
    UNION ALL SELECT ${WEIGHTED_TITLE_LENGTH_SUM_KEY}::text, n.n * ${Math.round(titleLength * 1000)}::bigint FROM n
    UNION ALL SELECT ${WEIGHTED_LENGTH_SQUARES_KEY}::text, round(n.n * ${length}::float8 ^ 2)::bigint FROM n
    UNION ALL SELECT ${WEIGHTED_TITLE_LENGTH_SQUARES_KEY}::text, round(n.n * ${titleLength}::float8 ^ 2)::bigint FROM n
    ON CONFLICT (term) DO UPDATE SET df = excluded.df`.execute(db);
}

export async function forgetWeightedLengths(db: DbExecutor): Promise<void> {
  await sql`DELETE FROM search_terms WHERE term IN (${WEIGHTED_LENGTH_KEY}, ${WEIGHTED_TITLE_LENGTH_KEY},
    ${RECORDED_ONLY_KEY}, ${WEIGHTED_LENGTH_SUM_KEY}, ${WEIGHTED_TITLE_LENGTH_SUM_KEY}, ${WEIGHTED_LENGTH_SQUARES_KEY},
    ${WEIGHTED_TITLE_LENGTH_SQUARES_KEY})`.execute(db);
}

/**
 * Recomputes the stored weights of the next `batch` chunks after `after` (in key order) with the
 * current average lengths; returns the last chunk done, or null at the end. With `writtenBefore` (from
 * `recordLengthsForReweighting`) only the chunks whose row version is older than that transaction id:
 * a bulk load goes on writing during a re-weighting, and its new chunks hold the averages already (a
 * fresh index's first re-weighting walked ~3 times the chunks it had to, 4,700 for 1,600, while 8 clients
 * wrote in the batch benchmark). Rows whose weights come out unchanged are not written again.
 */
export async function reweightChunks(
  db: DbExecutor,
  after: { document_id: string; chunk_id: number } | null,
  batch: number,
  writtenBefore?: string,
): Promise<{ document_id: string; chunk_id: number } | null> {
  // `age` compares ids across wraparound; frozen and bootstrap ids (< 3) are the oldest of all.
  const older =
    writtenBefore !== undefined && Number(writtenBefore) >= 3
      ? sql`AND age(xmin) > age(${writtenBefore}::xid)`
      : sql``;
  const result = await sql<{ document_id: string; chunk_id: number; n: number }>`
    WITH k AS (
      SELECT document_id, chunk_id, search_vector, bm25_terms, bm25_weights FROM chunks
      WHERE ${after ? sql`(document_id, chunk_id) > (${after.document_id}, ${after.chunk_id})` : sql`true`} ${older}
      ORDER BY document_id, chunk_id LIMIT ${batch}
      -- Maintenance never waits for a writer: chunks a transaction is replacing are skipped (they are
      -- written again, weighted as they are written); waiting could close a deadlock with its deletes.
      FOR UPDATE SKIP LOCKED
    ), done AS (
      -- Terms too: rows written before migration 0030 hold them in the collation's order, not the function's.
      UPDATE chunks c SET (bm25_terms, bm25_weights) = (w.terms, w.weights)
      FROM k, LATERAL kas_bm25_weights(k.search_vector) w
      WHERE c.document_id = k.document_id AND c.chunk_id = k.chunk_id
        AND (k.bm25_weights IS DISTINCT FROM w.weights OR k.bm25_terms IS DISTINCT FROM w.terms)
      RETURNING 1
    )
    SELECT document_id, chunk_id, (SELECT count(*) FROM done)::int AS n
    FROM k ORDER BY document_id DESC, chunk_id DESC LIMIT 1`.execute(db);
  const last = result.rows[0];
  // A short batch is not the end when locked rows were skipped: the end is a batch with no row.
  if (!last) return null;
  return { document_id: last.document_id, chunk_id: last.chunk_id };
}

/**
 * Reclaims the space of rows that maintenance replaced (PGlite has no autovacuum): always the
 * deltas, the statistics and champion lists when asked, the chunks after a re-weighting.
 */
export async function vacuumSearchTables(
  db: DbExecutor,
  tables: { statistics?: boolean; chunks?: boolean },
  options: { separately?: boolean } = {},
): Promise<void> {
  const names = ['search_term_deltas', 'search_written_documents'];
  if (tables.statistics) names.push('search_terms', 'search_champions');
  if (tables.chunks) names.push('chunks');
  for (const group of options.separately ? names.map((n) => [n]) : [names])
    await sql.raw(`VACUUM (ANALYZE) ${group.join(', ')}`).execute(db);
}

/**
 * Moves the entries writes left in the chunks' full-text index's pending list into the index proper.
 * With GIN's fast update (Postgres's default) each write appends its chunks' lexemes to a pending
 * list of up to `gin_pending_list_limit` (4 MB) that every search through the index reads in full;
 * autovacuum merges it only once a fifth of the table has been written again, so after a bulk load it
 * stays: after 1M chunks, 461 pages (1,716 chunks' entries) that took a rare word's index scan from
 * 0.1 to 1.3 ms (of a ~5 ms statement).
 */
export async function mergePendingPostings(db: DbExecutor): Promise<void> {
  await sql`SELECT gin_clean_pending_list('chunks_search_idx'::regclass)`.execute(db);
}

/**
 * Puts the chunks of documents written since (migration 0037) on the champion lists whose floor they
 * pass, taking at most `limit` of the queued writes (one per statement or group of documents): a list
 * then holds every chunk weighing more than its floor but the copies of a passage it leaves out.
 * Returns how many writes it took, or undefined when a list's build is running (try again later).
 */
export async function foldWrittenDocuments(db: Kysely<Database>, limit: number): Promise<number | undefined> {
  return db.transaction().execute(async (trx) => {
    // Not beside a list's build: one that began reading before a chunk was written, then replaced its
    // list, would drop what this put there (the write's queue entry gone). Builds wait for this one.
    const free = await sql<{
      free: boolean;
    }>`SELECT pg_try_advisory_xact_lock(${LISTS_LOCK}) AS free`.execute(trx);
    if (!free.rows[0]!.free) return undefined;
    // Raw SQL: data-modifying CTEs and `unnest` of two arrays, which the builder cannot express.
    const result = await sql<{ n: number }>`
    WITH taken AS (
      DELETE FROM search_written_documents
      WHERE ctid = ANY(ARRAY(SELECT ctid FROM search_written_documents LIMIT ${limit}))
      RETURNING document_ids
    ), written AS (
      SELECT DISTINCT unnest(document_ids) AS document_id FROM taken
    ), listed AS (
      INSERT INTO search_champions (term, document_id, chunk_id, weight)
      SELECT u.term, c.document_id, c.chunk_id, u.weight
      FROM written w
        JOIN chunks c ON c.document_id = w.document_id
        CROSS JOIN LATERAL unnest(c.bm25_terms, c.bm25_weights) AS u(term, weight)
        JOIN search_terms s ON s.term = u.term
      WHERE s.champions_df > 0 AND u.weight > s.champion_floor
      ON CONFLICT DO NOTHING
    )
    SELECT count(*)::int AS n FROM taken`.execute(trx);
    return result.rows[0]!.n;
  });
}

/**
 * Advisory lock key (an arbitrary constant): list builds hold it shared for their transaction,
 * `foldWrittenDocuments` exclusively, so that they never overlap.
 */
const LISTS_LOCK = 0x6b61_7301;

/** How many written documents wait for `foldWrittenDocuments` (each counted once per write). */
export async function writtenDocumentsPending(db: DbExecutor): Promise<number> {
  const result = await sql<{ n: number }>`
    SELECT coalesce(sum(cardinality(document_ids)), 0)::float8 AS n FROM search_written_documents`.execute(
    db,
  );
  return result.rows[0]!.n;
}

/**
 * Forgets the queued writes and marks every champion list stale instead (built at a frequency of 1),
 * for maintenance to rebuild: after a bulk load one pass over the chunks costs less than putting each
 * written chunk on its lists.
 */
export async function rebuildListsForWrites(db: DbExecutor): Promise<void> {
  await sql`
    WITH forgotten AS (DELETE FROM search_written_documents)
    UPDATE search_terms SET champions_df = 1 WHERE champions_df > 1`.execute(db);
}

/** Champion lists hold stored weights: after a re-weighting every list is rebuilt. */
export async function invalidateChampions(db: DbExecutor): Promise<void> {
  await sql`UPDATE search_terms SET champions_df = NULL, champion_floor = NULL WHERE champions_df IS NOT NULL`.execute(
    db,
  );
}

/** Frequent terms whose champion list is missing or was built at a quite different frequency. */
export async function staleChampionTerms(
  db: DbExecutor,
  args: { minDf: number; limit: number },
): Promise<{ term: string; df: number }[]> {
  const result = await sql<{ term: string; df: number }>`
    SELECT term, df::float8 AS df FROM search_terms
    WHERE df > ${args.minDf} AND term NOT LIKE ${RESERVED_KEYS}
      AND (champions_df IS NULL OR df > champions_df * 1.25 OR df < champions_df * 0.75)
    ORDER BY df DESC LIMIT ${args.limit}`.execute(db);
  return result.rows;
}

/** The smallest string greater than every string that starts with `prefix` (for range scans). */
function prefixUpperBound(prefix: string): string {
  const chars = [...prefix];
  const last = chars.pop()!;
  return chars.join('') + String.fromCodePoint(last.codePointAt(0)! + 1);
}

/**
 * Indexed terms starting with one of these prefixes, most frequent first (the prefix fallback). A
 * range over the `text_pattern_ops` index, plus terms whose frequencies are not folded in yet.
 */
export async function termsWithPrefix(
  db: DbExecutor,
  prefixes: string[],
  perPrefix: number,
): Promise<string[]> {
  const nonEmpty = prefixes.filter(Boolean);
  if (!nonEmpty.length) return [];
  const result = await sql<{ term: string }>`
    SELECT DISTINCT x.term FROM unnest(${nonEmpty}::text[], ${nonEmpty.map(prefixUpperBound)}::text[]) AS p(low, high),
    LATERAL (
      SELECT term FROM (
        SELECT term, df FROM search_terms WHERE term ~>=~ p.low AND term ~<~ p.high AND df > 0
        UNION
        SELECT DISTINCT term, 1 FROM search_term_deltas WHERE term ~>=~ p.low AND term ~<~ p.high
      ) t ORDER BY df DESC, term LIMIT ${perPrefix}
    ) x`.execute(db);
  return result.rows.map((r) => r.term);
}

/** An empty query lists the most recently updated documents (their first chunk). */
export async function recentChunks(
  db: DbExecutor,
  args: { filters: IndexFilters; access: AccessScope; limit: number },
): Promise<SearchHit[]> {
  const result = await sql<SearchHit>`
    SELECT c.document_id, c.chunk_id, 0::float8 AS score
    FROM documents d JOIN chunks c ON c.document_id = d.id AND c.chunk_id = 0
    WHERE ${documentConditions(args.filters, args.access)}
    ORDER BY d.doc_updated_at DESC, d.id
    LIMIT ${args.limit}`.execute(db);
  return result.rows;
}

export async function insertVocabulary(db: DbExecutor, terms: string[]): Promise<void> {
  if (!terms.length) return;
  await sql`INSERT INTO search_vocabulary (term) SELECT unnest(${terms}::text[]) ON CONFLICT DO NOTHING`.execute(
    db,
  );
}

export function clearVocabulary(db: DbExecutor) {
  return sql`DELETE FROM search_vocabulary`.execute(db);
}

/**
 * For each word that is not in the vocabulary, the closest word that is, if any: of the most similar
 * words by trigrams (pg_trgm) and the words made by swapping two neighbouring letters (which trigrams
 * miss: "deamon" shares too few with "daemon"), the one fewest edits away, a swap counting as one.
 */
export async function correctWords(db: DbExecutor, words: string[]): Promise<Map<string, string>> {
  if (!words.length) return new Map();
  const swaps = words.flatMap((word) => transpositionsOf(word).map((variant) => ({ word, variant })));
  const result = await sql<{ word: string; term: string }>`
    SELECT w.word, c.term, c.score
    FROM unnest(${words}::text[]) AS w(word)
    CROSS JOIN LATERAL (
      SELECT v.term, similarity(v.term, w.word) AS score FROM search_vocabulary v
      WHERE v.term % w.word
      ORDER BY similarity(v.term, w.word) DESC, v.term
      LIMIT 5
    ) c
    WHERE NOT EXISTS (SELECT 1 FROM search_vocabulary v WHERE v.term = w.word)
    UNION ALL
    SELECT s.word, v.term, similarity(v.term, s.word) AS score
    FROM unnest(${swaps.map((s) => s.word)}::text[], ${swaps.map((s) => s.variant)}::text[]) AS s(word, variant)
    JOIN search_vocabulary v ON v.term = s.variant
    WHERE NOT EXISTS (SELECT 1 FROM search_vocabulary x WHERE x.term = s.word)
    ORDER BY 1, 3 DESC, 2`.execute(db);
  // Rows come in order of similarity for each word: a tie in edits keeps the more similar word.
  const candidates = new Map<string, string[]>();
  for (const row of result.rows) candidates.set(row.word, [...(candidates.get(row.word) ?? []), row.term]);
  const corrections = new Map<string, string>();
  for (const [word, terms] of candidates) {
    const best = closest(word, terms, Number.POSITIVE_INFINITY);
    if (best) corrections.set(word, best);
  }
  return corrections;
}

/**
 * Loads hits with their document, checking access once more: an index that lags behind the
 * database can never reveal a document the caller may not see.
 */
export async function loadChunks(
  db: DbExecutor,
  keys: { document_id: string; chunk_id: number }[],
  access: AccessScope,
): Promise<StoredChunk[]> {
  if (!keys.length) return [];
  const result = await sql<StoredChunk>`
    SELECT ${STORED_CHUNK_COLUMNS}
    FROM unnest(${keys.map((k) => k.document_id)}::text[], ${keys.map((k) => k.chunk_id)}::int[]) AS k(document_id, chunk_id)
    JOIN chunks c ON c.document_id = k.document_id AND c.chunk_id = k.chunk_id
    JOIN documents d ON d.id = c.document_id
    WHERE ${documentConditions({ include_hidden: true }, access)}`.execute(db);
  return result.rows;
}

/**
 * Every chunk of one document in order, with the document, when the caller may see it (hidden documents
 * only for admins, as in chat): the full text a `fetch` returns. Empty when absent or not visible.
 */
export async function loadDocumentChunks(
  db: DbExecutor,
  documentId: string,
  access: AccessScope,
): Promise<StoredChunk[]> {
  const result = await sql<StoredChunk>`
    SELECT ${STORED_CHUNK_COLUMNS}
    FROM documents d
    JOIN chunks c ON c.document_id = d.id
    WHERE d.id = ${documentId} AND ${documentConditions({ include_hidden: access.all }, access)}
    ORDER BY c.chunk_id`.execute(db);
  return result.rows;
}

const vectorColumnByDb = new WeakMap<object, Promise<boolean>>();

/** Whether `chunk_embeddings.embedding` is a pgvector column (else `real[]`). */
export function embeddingsUseVector(db: DbExecutor): Promise<boolean> {
  let known = vectorColumnByDb.get(db);
  if (!known) {
    known = sql<{ udt_name: string }>`
      SELECT udt_name FROM information_schema.columns
      WHERE table_name = 'chunk_embeddings' AND column_name = 'embedding'`
      .execute(db)
      .then((r) => r.rows[0]?.udt_name === 'vector');
    vectorColumnByDb.set(db, known);
  }
  return known;
}

/** Stores normalised embeddings; `vector` or `real[]` by what the database has. */
export async function upsertEmbeddings(
  db: DbExecutor,
  rows: { document_id: string; chunk_id: number; embedding: number[] }[],
): Promise<void> {
  if (!rows.length) return;
  const useVector = await embeddingsUseVector(db);
  const literal = (e: number[]) => `[${e.join(',')}]`;
  const values = rows.map(
    (r) =>
      sql`(${r.document_id}, ${r.chunk_id}, ${useVector ? sql`${literal(r.embedding)}::vector` : sql`${r.embedding}::real[]`})`,
  );
  await sql`
    INSERT INTO chunk_embeddings (document_id, chunk_id, embedding) VALUES ${sql.join(values)}
    ON CONFLICT (document_id, chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding`.execute(db);
}

export function deleteEmbeddings(db: DbExecutor, documentIds: string[]) {
  return db.deleteFrom('chunk_embeddings').where('document_id', 'in', documentIds).execute();
}

export function clearEmbeddings(db: DbExecutor) {
  return db.deleteFrom('chunk_embeddings').execute();
}

/** Chunks of these documents that have no embedding yet. */
export function chunksWithoutEmbedding(db: DbExecutor, documentIds: string[]) {
  return db
    .selectFrom('chunks as c')
    .leftJoin('chunk_embeddings as e', (j) =>
      j.onRef('e.document_id', '=', 'c.document_id').onRef('e.chunk_id', '=', 'c.chunk_id'),
    )
    .select(['c.document_id', 'c.chunk_id', 'c.title', 'c.content'])
    .where('c.document_id', 'in', documentIds)
    .where('e.chunk_id', 'is', null)
    .orderBy('c.document_id')
    .orderBy('c.chunk_id')
    .execute();
}

/** Chunks of any document that have no embedding yet (indexed before embeddings were configured), in key order. */
export function chunksMissingEmbeddings(db: DbExecutor, limit: number) {
  return db
    .selectFrom('chunks as c')
    .leftJoin('chunk_embeddings as e', (j) =>
      j.onRef('e.document_id', '=', 'c.document_id').onRef('e.chunk_id', '=', 'c.chunk_id'),
    )
    .select(['c.document_id', 'c.chunk_id', 'c.title', 'c.content'])
    .where('e.chunk_id', 'is', null)
    .orderBy('c.document_id')
    .orderBy('c.chunk_id')
    .limit(limit)
    .execute();
}

export async function countChunksMissingEmbeddings(db: DbExecutor): Promise<number> {
  const row = await db
    .selectFrom('chunks as c')
    .leftJoin('chunk_embeddings as e', (j) =>
      j.onRef('e.document_id', '=', 'c.document_id').onRef('e.chunk_id', '=', 'c.chunk_id'),
    )
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('e.chunk_id', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Nearest chunks by cosine similarity (embeddings are stored normalised, so the dot product). With
 * pgvector the `<#>` operator; without it the dot product is computed in SQL over `real[]` — exact,
 * and linear in the number of chunks that pass access and filters.
 */
export async function vectorSearch(
  db: DbExecutor,
  args: { embedding: number[]; filters: IndexFilters; access: AccessScope; limit: number },
): Promise<SearchHit[]> {
  const where = documentConditions(args.filters, args.access);
  if (await embeddingsUseVector(db)) {
    const result = await sql<SearchHit>`
      SELECT e.document_id, e.chunk_id, (-(e.embedding <#> ${`[${args.embedding.join(',')}]`}::vector))::float8 AS score
      FROM chunk_embeddings e JOIN documents d ON d.id = e.document_id
      WHERE ${where}
      ORDER BY e.embedding <#> ${`[${args.embedding.join(',')}]`}::vector, e.document_id, e.chunk_id
      LIMIT ${args.limit}`.execute(db);
    return result.rows;
  }
  const result = await sql<SearchHit>`
    SELECT e.document_id, e.chunk_id,
      (SELECT sum(a * b) FROM unnest(e.embedding, ${args.embedding}::real[]) AS t(a, b))::float8 AS score
    FROM chunk_embeddings e JOIN documents d ON d.id = e.document_id
    WHERE ${where}
    ORDER BY score DESC, e.document_id, e.chunk_id
    LIMIT ${args.limit}`.execute(db);
  return result.rows;
}
