import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { configFrom } from '../config.ts';
import type { Db } from '../db/database.ts';
import { createRuntime } from '../runtime.ts';
import { rng } from '../testing/random.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { TEST_ENCRYPTION_KEY, testDbKind } from '../testing/test-runtime.ts';
import {
  B,
  bound,
  championsFor,
  championsToScore,
  DEFAULT_PLAN_LIMITS,
  idf,
  K1,
  listsCurrent,
  planQuery,
  settledByLists,
  TITLE_WEIGHT,
} from './bm25.ts';
import { createPostgresSearchIndex, type PostgresSearchIndex } from './postgres.ts';
import * as searchRepository from './search.repository.ts';
import type { AccessScope, SearchHit } from './search-index.ts';

const ALL: AccessScope = { all: true };

/** Words that the English stemmer leaves alone and that are no stop words: `w<letters>`. */
function vocabulary(size: number): string[] {
  const letters = 'bcdfghjklmnpqrstvwxz';
  return Array.from({ length: size }, (_, i) => {
    let word = 'w';
    let n = i;
    do {
      word += letters[n % letters.length];
      n = Math.floor(n / letters.length);
    } while (n > 0);
    return `${word}a`;
  });
}

/** Inserts documents of one chunk each, straight into the tables (the database computes the statistics). */
async function insertDocuments(
  db: Db,
  docs: {
    id: string;
    title: string;
    content: string;
    is_public?: boolean;
    users?: string[];
    boost?: number;
  }[],
) {
  for (let i = 0; i < docs.length; i += 500) {
    const batch = docs.slice(i, i + 500);
    await db.transaction().execute(async (trx) => {
      await sql`
        INSERT INTO documents (id, semantic_id, title, source, from_ingestion_api, doc_updated_at, content_hash,
          chunk_count, is_public, access_user_ids, access_group_ids, tags, boost)
        SELECT id, title, title, 'file', true, now(), '', 1, is_public,
          CASE WHEN users = '' THEN '{}'::uuid[] ELSE string_to_array(users, ',')::uuid[] END, '{}', '{}', boost
        FROM unnest(${batch.map((d) => d.id)}::text[], ${batch.map((d) => d.title)}::text[],
          ${batch.map((d) => d.is_public ?? true)}::bool[], ${batch.map((d) => (d.users ?? []).join(','))}::text[],
          ${batch.map((d) => d.boost ?? 0)}::int[]) AS t(id, title, is_public, users, boost)`.execute(trx);
      await sql`
        INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
        SELECT id, 0, title, content, left(content, 100), NULL, 100
        FROM unnest(${batch.map((d) => d.id)}::text[], ${batch.map((d) => d.title)}::text[],
          ${batch.map((d) => d.content)}::text[]) AS t(id, title, content)`.execute(trx);
    });
  }
}

interface Corpus {
  chunks: number;
  length: number;
  titleLength: number;
  docs: Map<
    string,
    { visibleTo: string[]; isPublic: boolean; terms: Map<string, { tf: number; ttf: number }> }
  >;
  df: Map<string, number>;
}

/** Every chunk's term frequencies per field, read back from its tsvector (positions and their weights). */
async function loadCorpus(db: Db): Promise<Corpus> {
  const rows = await sql<{
    id: string;
    lexeme: string;
    weights: string[];
    is_public: boolean;
    users: string[];
  }>`
    SELECT c.document_id AS id, u.lexeme, u.weights, d.is_public, d.access_user_ids::text[] AS users
    FROM chunks c JOIN documents d ON d.id = c.document_id, unnest(c.search_vector) AS u`.execute(db);
  const corpus: Corpus = { chunks: 0, length: 0, titleLength: 0, docs: new Map(), df: new Map() };
  for (const row of rows.rows) {
    let doc = corpus.docs.get(row.id);
    if (!doc) {
      doc = { visibleTo: row.users, isPublic: row.is_public, terms: new Map() };
      corpus.docs.set(row.id, doc);
    }
    const tf = row.weights.filter((w) => w === 'D').length;
    const ttf = row.weights.filter((w) => w === 'A').length;
    doc.terms.set(row.lexeme, { tf, ttf });
    corpus.length += tf;
    corpus.titleLength += ttf;
    corpus.df.set(row.lexeme, (corpus.df.get(row.lexeme) ?? 0) + 1);
  }
  corpus.chunks = corpus.docs.size;
  return corpus;
}

/** Textbook BM25 over every chunk (of those `user` may see), best first. */
function exhaustiveBm25(corpus: Corpus, query: string[], user?: string): { id: string; score: number }[] {
  const sat = (tf: number, length: number, avg: number) =>
    (tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * length) / avg));
  const avgLength = corpus.length / corpus.chunks;
  const avgTitleLength = corpus.titleLength / corpus.chunks;
  const scores: { id: string; score: number }[] = [];
  for (const [id, doc] of corpus.docs) {
    if (user && !doc.isPublic && !doc.visibleTo.includes(user)) continue;
    let length = 0;
    let titleLength = 0;
    for (const t of doc.terms.values()) {
      length += t.tf;
      titleLength += t.ttf;
    }
    let score = 0;
    for (const term of query) {
      const t = doc.terms.get(term);
      if (!t) continue;
      score +=
        idf(corpus.chunks, corpus.df.get(term)!) *
        (sat(t.tf, length, avgLength) + (t.ttf ? TITLE_WEIGHT * sat(t.ttf, titleLength, avgTitleLength) : 0));
    }
    if (score > 0) scores.push({ id, score });
  }
  return scores.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
}

/**
 * The same ranking up to ties: every hit has the score the reference gives its chunk, and the i-th
 * hit the reference's i-th score (stored weights are 4-byte floats, so equal scores may swap). Fewer
 * `digits` where chunks were written at other average lengths than today's.
 */
function expectSameRanking(hits: SearchHit[], expected: { id: string; score: number }[], digits = 3) {
  const scoreOf = new Map(expected.map((e) => [e.id, e.score]));
  hits.forEach((hit, i) => {
    expect(scoreOf.get(hit.document_id), hit.document_id).toBeCloseTo(hit.score, digits);
    expect(hit.score).toBeCloseTo(expected[i]!.score, digits);
  });
}

describe('BM25 ranking of the Postgres index', () => {
  const t = useTestRuntime();
  let index: PostgresSearchIndex;
  const search = async (query: string, limit = 10, access: AccessScope = ALL) =>
    (await index.search({ query, filters: {}, access, limit })).map((h) => h.document_id);

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db);
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `filler${i % 7}`).join(' ');
    await insertDocuments(t.deps.db, [
      { id: 'rare', title: 'Notes', content: `zeppelin mooring ${filler(20)}` },
      { id: 'common', title: 'Notes', content: `mooring mooring mooring ${filler(20)}` },
      { id: 'short', title: 'Misc', content: 'kestrel sightings' },
      { id: 'long', title: 'Misc', content: `kestrel sightings ${filler(200)}` },
      { id: 'in-title', title: 'Lighthouse', content: `duties ${filler(10)}` },
      { id: 'in-body', title: 'Duties', content: `the lighthouse ${filler(10)}` },
      { id: 'boosted', title: 'Hangar', content: `hangar doors ${filler(10)}`, boost: 4 },
      { id: 'plain', title: 'Hangar', content: `hangar doors ${filler(10)}` },
      { id: 'stop', title: 'Words', content: 'the of and to in it is was the the the of of a an' },
      { id: 'pelican', title: 'Birds', content: 'a pelican on the pier' },
      ...Array.from({ length: 30 }, (_, i) => ({
        id: `bulk-${i}`,
        title: 'Bulk',
        content: `mooring ${filler(15)} item${i}`,
      })),
    ]);
    await index.maintain();
  });
  afterAll(async () => {
    await index?.close();
  });

  it('weighs rare terms above frequent ones (IDF)', async () => {
    expect((await search('zeppelin mooring'))[0]).toBe('rare');
  });

  it('normalises by length: the shorter chunk with the same matches ranks first', async () => {
    expect(await search('kestrel')).toEqual(['short', 'long']);
  });

  it('counts the title as a boosted field', async () => {
    expect((await search('lighthouse')).slice(0, 2)).toEqual(['in-title', 'in-body']);
  });

  it('multiplies by the document boost', async () => {
    expect((await search('hangar doors')).slice(0, 2)).toEqual(['boosted', 'plain']);
  });

  it('treats a natural question as a weak AND: unknown and stop words never empty the result', async () => {
    expect((await search('where can I watch a kestrel flying over the quarry'))[0]).toBe('short');
    expect(await search('the the of and')).toEqual([]);
    // "the" is in one document fifteen times: stop words do not decide the ranking.
    expect(await search('the pelican')).toEqual(['pelican']);
  });

  it('scores exactly as a textbook BM25 over the same chunks', async () => {
    const hits = await index.search({ query: 'mooring zeppelin', filters: {}, access: ALL, limit: 50 });
    const expected = exhaustiveBm25(await loadCorpus(t.deps.db), ['moor', 'zeppelin']);
    expect(hits).toHaveLength(expected.length);
    expectSameRanking(hits, expected);
  });
});

/**
 * Every candidate a search scores reads its chunk's term and weight arrays: they stay in the row
 * uncompressed (migration 0036) for a chunk of ordinary size, and a chunk with far more distinct terms
 * than a row holds is still written and found (its arrays compressed, or moved out of line).
 */
describe('BM25 term arrays are stored in the row uncompressed', () => {
  const t = useTestRuntime();
  let index: PostgresSearchIndex;
  const words = vocabulary(1200);

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db);
    const random = rng(36);
    // ~300 words, ~100 distinct: the row (~4 KB with content and vector) is over the 2 KB threshold.
    const ordinary = Array.from({ length: 300 }, () => words[Math.floor(random() * 100)]).join(' ');
    // 1,100 distinct words: the arrays alone are larger than a page.
    const huge = words.slice(100).join(' ');
    await insertDocuments(t.deps.db, [
      { id: 'ordinary', title: 'Ordinary chunk', content: ordinary },
      { id: 'huge', title: 'A glossary', content: huge },
      { id: 'other', title: 'Another', content: `${words[0]} ${words[1]} ${words[1199]}` },
      // Enough chunks for the index's own average lengths (the textbook's).
      ...Array.from({ length: 30 }, (_, i) => ({
        id: `filler-${i}`,
        title: 'Filler',
        content: `${words[i]} ${words[i + 1]} ${words[i + 2]}`,
      })),
    ]);
    await index.maintain();
  });
  afterAll(async () => {
    await index?.close();
  });

  it('keeps an ordinary chunk’s arrays uncompressed in its row, though the row is over 2 KB', async () => {
    const { rows } = await sql<{ terms: string | null; weights: string | null; size: number; n: number }>`
      SELECT pg_column_compression(bm25_terms) AS terms, pg_column_compression(bm25_weights) AS weights,
        octet_length(content) + pg_column_size(search_vector) + pg_column_size(bm25_terms)
          + pg_column_size(bm25_weights) AS size, cardinality(bm25_terms) AS n
      FROM chunks WHERE document_id = 'ordinary'`.execute(t.deps.db);
    expect(rows[0]!.n).toBeGreaterThan(50);
    expect(rows[0]!.size).toBeGreaterThan(2048);
    expect(rows[0]!.terms).toBeNull();
    expect(rows[0]!.weights).toBeNull();
  });

  it('writes and finds a chunk whose arrays do not fit a row, scored as a textbook BM25', async () => {
    const { rows } = await sql<{ n: number }>`
      SELECT cardinality(bm25_terms) AS n FROM chunks WHERE document_id = 'huge'`.execute(t.deps.db);
    expect(rows[0]!.n).toBe(1101); // its words and the title’s
    const query = words[1199]!;
    const hits = await index.search({ query, filters: {}, access: ALL, limit: 10 });
    expect(hits.map((h) => h.document_id).sort()).toEqual(['huge', 'other']);
    expectSameRanking(hits, exhaustiveBm25(await loadCorpus(t.deps.db), [query]));
  });
});

/**
 * A chunk's terms are stored in byte order and each query term finds its place among them by binary
 * search: words whose order differs between bytes and a language's collation (accents, capitals'
 * lexemes, digits, other scripts) must each be found, on a database created with such a collation too.
 */
describe('BM25 finds every query term among a chunk’s stored terms, whatever its bytes', () => {
  const words = ['über', 'zebra', 'café', 'cafz', '42nd', 'abc', 'naïve', '東京', 'ελληνικά', 'x_y', 'ærø'];
  const documents = Array.from({ length: 24 }, (_, i) => ({
    id: `doc-${i}`,
    title: i % 3 === 0 ? words[i % words.length]! : 'Notes',
    // Each document holds a different subset of the words, some repeated.
    content: words
      .filter((_, w) => (i + w) % 3 !== 0)
      .map((word, w) => Array.from({ length: 1 + ((i * w) % 3) }, () => word).join(' '))
      .join(' filler '),
  }));
  const queries = [...words, 'zebra café', '東京 42nd ærø', words.join(' ')];

  async function expectExactScores(db: Db) {
    await insertDocuments(db, documents);
    const index = createPostgresSearchIndex(db);
    try {
      await index.maintain();
      const corpus = await loadCorpus(db);
      const sorted = await sql<{ sorted: boolean }>`
        SELECT bool_and(bm25_terms = ARRAY(SELECT t FROM unnest(bm25_terms) t ORDER BY t COLLATE "C")) AS sorted
        FROM chunks`.execute(db);
      expect(sorted.rows[0]!.sorted).toBe(true);
      for (const query of queries) {
        const lexemes = await sql<{ lexeme: string }>`
          SELECT lexeme FROM unnest(to_tsvector('english', ${query}))`.execute(db);
        const expected = exhaustiveBm25(
          corpus,
          lexemes.rows.map((r) => r.lexeme),
        );
        expect(expected.length, query).toBeGreaterThan(0);
        const hits = await index.search({ query, filters: {}, access: ALL, limit: 50 });
        expect(hits, query).toHaveLength(expected.length);
        expectSameRanking(hits, expected);
      }
    } finally {
      await index.close();
    }
  }

  describe('on the test database', () => {
    const t = useTestRuntime();
    it('scores each word as a textbook BM25 does', async () => {
      await expectExactScores(t.deps.db);
    });
  });

  // Managed Postgres servers often create databases with a language's collation (en_US), under which
  // `café` sorts before `cafz`: the lookup must compare bytes all the same.
  it.runIf(testDbKind() === 'postgres')(
    'scores each word as a textbook BM25 does on a database whose collation is English (ICU)',
    async () => {
      const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
      const name = `kas_icu_${randomBytes(6).toString('hex')}`;
      await admin.connect();
      await admin.query(
        `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`,
      );
      const url = new URL(inject('pgAdminUrl'));
      url.pathname = `/${name}`;
      const runtime = await createRuntime(
        configFrom({
          DATABASE_URL: url.toString(),
          KAS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
          KAS_LOG_LEVEL: 'silent',
        }),
        { skipBootstrap: true, db: { poolSize: 2 } },
      );
      try {
        const order = await sql<{ words: string[] }>`
          SELECT ARRAY(SELECT w FROM unnest(ARRAY['cafz', 'café']) w ORDER BY w) AS words`.execute(
          runtime.deps.db,
        );
        expect(order.rows[0]!.words).toEqual(['café', 'cafz']);
        await expectExactScores(runtime.deps.db);
      } finally {
        await runtime.close();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
        await admin.end();
      }
    },
    60_000,
  );
});

describe('fast top-k: candidates from rare terms and champion lists agree with exhaustive BM25', {
  tags: ['slow'],
}, () => {
  const t = useTestRuntime();
  let index: PostgresSearchIndex;
  let words: string[];
  let restrictedUser: string;
  let corpus: Corpus;
  // Small limits, so that a corpus of a few thousand chunks exercises every path of the plan (only the
  // 40 champion candidates the lists rank highest are scored: four times the limit).
  const limits = { champions: 40, alwaysFullDf: 25, fullBudget: 120, scoredChampions: 0 };

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db, { limits });
    restrictedUser = (await t.createKey('basic', 'sees one percent')).user_id;
    words = vocabulary(2000);
    const random = rng(11);
    // Zipf-distributed words, as in real text.
    const weights = words.map((_, i) => 1 / (i + 1) ** 1.05);
    const total = weights.reduce((a, b) => a + b, 0);
    let acc = 0;
    const cdf = weights.map((w) => (acc += w / total));
    const word = () => {
      const r = random();
      let lo = 0;
      let hi = cdf.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cdf[mid]! < r) lo = mid + 1;
        else hi = mid;
      }
      return words[lo]!;
    };
    const text = (n: number) => Array.from({ length: n }, word).join(' ');
    await insertDocuments(
      t.deps.db,
      Array.from({ length: 3000 }, (_, i) => ({
        id: `g-${i}`,
        title: text(3),
        content: text(20 + Math.floor(random() * 80)),
        // One document in a hundred is visible to the restricted user only.
        ...(i % 100 === 0 ? { is_public: false, users: [restrictedUser] } : { is_public: false }),
      })),
    );
    await index.maintain();
    corpus = await loadCorpus(t.deps.db);
  });
  afterAll(async () => {
    await index?.close();
  });

  const overlap = (a: SearchHit[], b: { id: string }[]) => {
    const expected = new Set(b.slice(0, 10).map((e) => e.id));
    return a.slice(0, 10).filter((h) => expected.has(h.document_id)).length;
  };

  it('agrees on ≥ 9 of the top 10 on average for queries with a word outside the most frequent 1 %', async () => {
    const random = rng(5);
    const frequent = words.slice(0, 20);
    const other = words.slice(20, 1500);
    const agreements: number[] = [];
    for (let q = 0; q < 40; q++) {
      const terms = [
        other[Math.floor(random() * other.length)]!,
        ...Array.from({ length: 1 + (q % 3) }, () => frequent[Math.floor(random() * frequent.length)]!),
      ];
      const hits = await index.search({ query: terms.join(' '), filters: {}, access: ALL, limit: 10 });
      const expected = exhaustiveBm25(corpus, terms);
      agreements.push(overlap(hits, expected) / Math.min(10, expected.length));
    }
    const mean = agreements.reduce((a, b) => a + b, 0) / agreements.length;
    console.log('top-10 agreement, a word outside the most frequent 1 %:', mean);
    expect(mean).toBeGreaterThanOrEqual(0.9);
  });

  it('still ranks well for queries made only of very frequent words', async () => {
    const random = rng(6);
    const agreements: number[] = [];
    for (let q = 0; q < 20; q++) {
      const terms = Array.from({ length: 2 }, () => words[Math.floor(random() * 20)]!);
      const hits = await index.search({ query: terms.join(' '), filters: {}, access: ALL, limit: 10 });
      // A chunk on both words' champion lists is one result.
      expect(new Set(hits.map((h) => `${h.document_id}/${h.chunk_id}`)).size).toBe(hits.length);
      agreements.push(overlap(hits, exhaustiveBm25(corpus, terms)) / 10);
    }
    const mean = agreements.reduce((a, b) => a + b, 0) / agreements.length;
    // Champion lists make this approximate; the benchmark reports the figure at 100k chunks.
    console.log('top-10 agreement, only very frequent words:', mean);
    expect(mean).toBeGreaterThanOrEqual(0.7);
  });

  it('scores fewer champion candidates when the chunks holding every word are scored too, ranking as well', async () => {
    // Queries of three or four frequent words: the chunks holding all of them are the intersection arm's.
    const random = rng(9);
    const queries = Array.from({ length: 20 }, (_, q) =>
      Array.from({ length: 3 + (q % 2) }, () => words[Math.floor(random() * 30)]!),
    );
    const agreementWith = async (cuts: { scoredChampions: number; scoredChampionsIntersected: number }) => {
      const cut = createPostgresSearchIndex(t.deps.db, { limits: { ...limits, ...cuts } });
      try {
        let sum = 0;
        for (const terms of queries) {
          const hits = await cut.search({ query: terms.join(' '), filters: {}, access: ALL, limit: 10 });
          sum += overlap(hits, exhaustiveBm25(corpus, terms)) / 10;
        }
        return sum / queries.length;
      } finally {
        await cut.close();
      }
    };
    const plans = await Promise.all(
      queries.map(async (terms) => {
        const stats = await searchRepository.queryTerms(t.deps.db, terms);
        return planQuery(stats.chunks, stats.terms, { ...DEFAULT_PLAN_LIMITS, ...limits });
      }),
    );
    expect(plans.every((plan) => plan.conjunctive.length > 0)).toBe(true);
    const deep = await agreementWith({ scoredChampions: 400, scoredChampionsIntersected: 400 });
    const shallow = await agreementWith({ scoredChampions: 400, scoredChampionsIntersected: 40 });
    console.log('top-10 agreement, three or four frequent words, 400 / 40 candidates:', deep, shallow);
    expect(shallow).toBeGreaterThanOrEqual(deep - 0.02);
    expect(
      championsToScore(
        10,
        { ...DEFAULT_PLAN_LIMITS, scoredChampions: 400, scoredChampionsIntersected: 40 },
        plans[0],
      ),
    ).toBe(40);
    expect(championsToScore(25, DEFAULT_PLAN_LIMITS, plans[0])).toBe(500);
    expect(championsToScore(25, DEFAULT_PLAN_LIMITS)).toBe(1000);
    // Never more than without the intersection, never fewer than four times the limit.
    expect(championsToScore(10, { ...DEFAULT_PLAN_LIMITS, scoredChampions: 0 }, plans[0])).toBe(40);
  });

  it('builds the same champion lists in one pass over the chunks as one term at a time', async () => {
    const db = t.deps.db;
    expect(await searchRepository.staleChampionTerms(db, { minDf: limits.alwaysFullDf, limit: 10 })).toEqual(
      [],
    );
    const terms = (
      await sql<{ term: string; df: number }>`
        SELECT term, df::float8 AS df FROM search_terms WHERE champions_df IS NOT NULL ORDER BY term`.execute(
        db,
      )
    ).rows;
    // Lists are above the floor exactly; at the floor, ties may be broken differently.
    const lists = async () => {
      const rows = await sql<{ term: string; floor: number; size: number; chunks: string | null }>`
        SELECT s.term, s.champion_floor::float8 AS floor,
          (SELECT count(*) FROM search_champions c WHERE c.term = s.term)::int AS size,
          (SELECT string_agg(c.document_id || '/' || c.chunk_id, ',' ORDER BY c.document_id, c.chunk_id)
           FROM search_champions c WHERE c.term = s.term AND c.weight > s.champion_floor) AS chunks
        FROM search_terms s WHERE s.champions_df IS NOT NULL ORDER BY s.term`.execute(db);
      return rows.rows;
    };
    for (const term of terms) await searchRepository.buildChampions(db, term.term, term.df, limits.champions);
    const oneByOne = await lists();
    // Small ranges of pages, so that floors rise between them.
    await searchRepository.buildChampionsTogether(
      db,
      terms.map((term) => ({ ...term, size: limits.champions })),
      {
        firstPages: 2,
        maxPages: 4,
      },
    );
    expect(await lists()).toEqual(oneByOne);
    expect(oneByOne.length).toBeGreaterThan(50);
  });

  it("builds the same champion lists in short steps (the embedded database's pass) as maintenance did", async () => {
    const db = t.deps.db;
    const terms = (
      await sql<{ term: string; df: number }>`
        SELECT term, df::float8 AS df FROM search_terms WHERE champions_df IS NOT NULL ORDER BY term`.execute(
        db,
      )
    ).rows;
    const lists = async () =>
      (
        await sql<{ term: string; floor: number; size: number; chunks: string | null }>`
          SELECT s.term, s.champion_floor::float8 AS floor,
            (SELECT count(*) FROM search_champions c WHERE c.term = s.term)::int AS size,
            (SELECT string_agg(c.document_id || '/' || c.chunk_id, ',' ORDER BY c.document_id, c.chunk_id)
             FROM search_champions c WHERE c.term = s.term AND c.weight > s.champion_floor) AS chunks
          FROM search_terms s WHERE s.champions_df IS NOT NULL ORDER BY s.term`.execute(db)
      ).rows;
    // As maintenance built them (exactly as one term at a time: see above).
    const oneByOne = await lists();
    // Ties at the floor too, where keys sort byte by byte as the pass compares them (the embedded
    // database's collation).
    const whole = () =>
      sql<{ term: string; chunks: string }>`
        SELECT term, string_agg(document_id || '/' || chunk_id, ',' ORDER BY document_id, chunk_id) AS chunks
        FROM search_champions GROUP BY term ORDER BY term`.execute(db);
    const before = (await whole()).rows;
    // Small ranges first (doubling: every statement is quick here), so that floors rise between
    // them; a few terms per write.
    const floors = await searchRepository.buildChampionsInSteps(
      db,
      terms.map((term) => ({ ...term, size: limits.champions })),
      { firstPages: 2, stepMs: 1e6, termsPerWrite: 7 },
    );
    expect(await lists()).toEqual(oneByOne);
    if (testDbKind() === 'pglite') expect((await whole()).rows).toEqual(before);
    expect(floors?.size).toBe(terms.length);
    // Told to stop, it writes nothing.
    await sql`UPDATE search_terms SET champions_df = 1 WHERE term = ${terms[0]!.term}`.execute(db);
    expect(
      await searchRepository.buildChampionsInSteps(
        db,
        terms.map((term) => ({ ...term, size: limits.champions })),
        { stop: () => true },
      ),
    ).toBeNull();
    expect(
      Number(
        (
          await sql<{
            df: number;
          }>`SELECT champions_df::float8 AS df FROM search_terms WHERE term = ${terms[0]!.term}`.execute(db)
        ).rows[0]!.df,
      ),
    ).toBe(1);
    await searchRepository.buildChampions(db, terms[0]!.term, terms[0]!.df, limits.champions);
  });

  it('on the embedded database, a search makes a provisional list for a very frequent term that has none, which maintenance replaces', async () => {
    const db = t.deps.db;
    const embedded = createPostgresSearchIndex(db, { limits, embedded: true });
    const term = words[0]!;
    // As if the term were in more than 10,000 chunks (too many to read in one statement there).
    await sql`UPDATE search_terms SET df = df + 20000 WHERE term = ${term}`.execute(db);
    try {
      const listOf = async () =>
        (
          await sql<{ champions_df: number | null; size: number }>`
            SELECT champions_df::float8 AS champions_df,
              (SELECT count(*) FROM search_champions c WHERE c.term = s.term)::int AS size
            FROM search_terms s WHERE s.term = ${term}`.execute(db)
        ).rows[0]!;
      await sql`DELETE FROM search_champions WHERE term = ${term}`.execute(db);
      await sql`UPDATE search_terms SET champions_df = NULL, champion_floor = NULL WHERE term = ${term}`.execute(
        db,
      );
      const hits = await embedded.search({ query: term, filters: {}, access: ALL, limit: 10 });
      expect(hits).toHaveLength(10);
      // Built at a frequency of 0: stale, so that maintenance builds the real list.
      expect(await listOf()).toEqual({ champions_df: 0, size: limits.champions });
      expect(
        await searchRepository.staleChampionTerms(db, { minDf: limits.alwaysFullDf, limit: 100 }),
      ).toContainEqual(expect.objectContaining({ term }));
      await embedded.maintain();
      const rebuilt = await listOf();
      expect(rebuilt.champions_df).toBeGreaterThan(0);
      expect(rebuilt.size).toBe(limits.champions);
    } finally {
      await embedded.close();
      await sql`UPDATE search_terms SET df = df - 20000 WHERE term = ${term}`.execute(db);
      const { df } = (
        await sql<{ df: number }>`SELECT df::float8 AS df FROM search_terms WHERE term = ${term}`.execute(db)
      ).rows[0]!;
      await searchRepository.buildChampions(db, term, df, limits.champions);
    }
  });

  it('gives a user who sees 1 % of the documents their own best ten, not what is left after a cut', async () => {
    const access: AccessScope = { all: false, user_id: restrictedUser, group_ids: [], external: [] };
    for (const term of words.slice(0, 5)) {
      const hits = await index.search({ query: term, filters: {}, access, limit: 10 });
      const expected = exhaustiveBm25(corpus, [term], restrictedUser);
      expect(expected.length).toBeGreaterThanOrEqual(10);
      expect(hits).toHaveLength(10);
      expectSameRanking(hits, expected);
    }
  });
});

describe('champion lists: queries of frequent words only, lists not built yet, lengths by frequency', () => {
  const t = useTestRuntime();
  const [a, b, ...filler] = vocabulary(40) as [string, string, ...string[]];
  // Lists of 20 grow with √df past 50: 40 for these words (in 201 chunks each).
  const limits = {
    champions: 20,
    championsGrowthDf: 50,
    alwaysFullDf: 25,
    fullBudget: 0,
    scoredChampions: 0,
    buildOnDemandDf: 100,
  };
  let index: PostgresSearchIndex;
  const listOf = async (term: string) =>
    (
      await sql<{ id: string }>`
        SELECT document_id AS id FROM search_champions WHERE term = ${term} ORDER BY weight DESC, document_id`.execute(
        t.deps.db,
      )
    ).rows.map((r) => r.id);

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db, { limits });
    // Ten words per chunk: a word three times in 40 chunks, once in 160, and one chunk with both words once.
    const fill = (i: number, n: number) =>
      Array.from({ length: n }, (_, j) => filler[(i + j) % filler.length]).join(' ');
    const docs = [a, b].flatMap((word) =>
      Array.from({ length: 200 }, (_, i) => ({
        id: `${word}-${i}`,
        title: fill(i + 7, 1),
        content: i < 40 ? `${word} ${word} ${word} ${fill(i, 7)}` : `${word} ${fill(i, 9)}`,
      })),
    );
    docs.push({ id: 'both', title: fill(3, 1), content: `${a} ${b} ${fill(0, 8)}` });
    await insertDocuments(t.deps.db, docs);
  });
  afterAll(async () => {
    await index?.close();
  });

  it('samples a frequent word whose list is missing instead of building it during the search', async () => {
    const hits = await index.search({ query: a, filters: {}, access: ALL, limit: 10 });
    expect(hits).toHaveLength(10);
    // Every chunk of the word was in the sample: the ten are chunks holding it three times.
    for (const hit of hits) expect(Number(hit.document_id.split('-')[1])).toBeLessThan(40);
    expect(await listOf(a)).toEqual([]);
  });

  it('finds the chunk holding both words of a query, on neither list, and sizes lists by frequency', async () => {
    await index.maintain();
    expect(await listOf(a)).toHaveLength(40);
    expect(await listOf(a)).not.toContain('both');
    expect(await listOf(b)).not.toContain('both');
    const hits = await index.search({ query: `${a} ${b}`, filters: {}, access: ALL, limit: 10 });
    expect(hits[0]!.document_id).toBe('both');
    expectSameRanking(hits, exhaustiveBm25(await loadCorpus(t.deps.db), [a, b]));
  });

  it('builds lists of each term’s own length in one pass over the chunks', async () => {
    const one = { a: await listOf(a), b: await listOf(b) };
    await searchRepository.buildChampionsTogether(
      t.deps.db,
      [
        { term: a, df: 201, size: 40 },
        { term: b, df: 201, size: 30 },
      ],
      { firstPages: 1, maxPages: 2 },
    );
    expect(await listOf(a)).toEqual(one.a);
    expect(await listOf(b)).toEqual(one.b.slice(0, 30));
  });

  it('scores up to 1,000 champion candidates exactly on the embedded database, the default number on Postgres', async () => {
    const embedded = createPostgresSearchIndex(t.deps.db, { embedded: true });
    const server = createPostgresSearchIndex(t.deps.db);
    try {
      expect(championsToScore(10, embedded.limits)).toBe(1000);
      expect(championsToScore(10, server.limits)).toBe(championsToScore(10));
      // Limits given still win.
      const given = createPostgresSearchIndex(t.deps.db, { embedded: true, limits: { scoredChampions: 50 } });
      expect(given.limits.scoredChampions).toBe(50);
      await given.close();
    } finally {
      await embedded.close();
      await server.close();
    }
  });

  it('on the embedded database, maintenance’s pass in short steps sizes each list by its term’s frequency too', async () => {
    const db = t.deps.db;
    // Lists of 2 growing with √df past 50: 40 for a term in 20,201 chunks, which the embedded
    // database's maintenance leaves to its pass over the chunks (more than 10,000).
    const small = { ...limits, champions: 2 };
    const embedded = createPostgresSearchIndex(db, { limits: small, embedded: true });
    await searchRepository.foldTermDeltas(db);
    await sql`UPDATE search_terms SET df = df + 20000, champions_df = NULL WHERE term = ${a}`.execute(db);
    try {
      await embedded.maintain();
      const list = await listOf(a);
      // Of the 201 chunks holding the word.
      const size = Math.min(201, championsFor(20201, { ...DEFAULT_PLAN_LIMITS, ...small }));
      expect(size).toBeGreaterThanOrEqual(40);
      expect(list).toHaveLength(size);
      // First the word's 40 chunks holding it three times, best by weight then key, as one list's build.
      expect(list.slice(0, 40).every((id) => Number(id.split('-')[1]) < 40)).toBe(true);
    } finally {
      await embedded.close();
      await sql`UPDATE search_terms SET df = df - 20000 WHERE term = ${a}`.execute(db);
    }
  });
});

/**
 * Lists of 20 chunks, a term in more than 25 chunks scored only through its list (built during the
 * search up to 1,000), every listed candidate scored, no conjunctive arm: a chunk is a candidate only
 * through a list.
 */
const LISTS_ONLY = {
  champions: 20,
  alwaysFullDf: 25,
  fullBudget: 0,
  conjunctiveBudget: 0,
  scoredChampions: 0,
  buildOnDemandDf: 1000,
};

describe('champion lists of very common words hold a share of their chunks', () => {
  const t = useTestRuntime();
  const [a, b, filler] = vocabulary(3) as [string, string, string];
  // Each word in 400 of 780 chunks: by √df its list would hold 57 (20 · √(400 / 50)), all of them the
  // 60 chunks holding it three times; a quarter of its chunks is 100. The chunks of each kind are
  // copies of one text: no cap on copies here (see the next suite for it).
  const limits = { ...LISTS_ONLY, copies: 1000, championsGrowthDf: 50, championsShare: 0.25 };
  let index: PostgresSearchIndex;

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db, { limits });
    // Ten words per chunk, one title word: weights differ only by how often a word occurs.
    const chunk = (id: string, words: string[]) => ({
      id,
      title: filler,
      content: [...words, ...Array(10 - words.length).fill(filler)].join(' '),
    });
    const docs = [
      ...Array.from({ length: 60 }, (_, i) => chunk(`a3-${i}`, [a, a, a])),
      ...Array.from({ length: 60 }, (_, i) => chunk(`b3-${i}`, [b, b, b])),
      // Twice each word: on neither √df list, but they outrank every chunk holding one word three times.
      ...Array.from({ length: 20 }, (_, i) => chunk(`ab-${i}`, [a, a, b, b])),
      ...Array.from({ length: 320 }, (_, i) => chunk(`a1-${i}`, [a])),
      ...Array.from({ length: 320 }, (_, i) => chunk(`b1-${i}`, [b])),
    ];
    await insertDocuments(t.deps.db, docs);
    await index.maintain();
  });
  afterAll(async () => {
    await index?.close();
  });

  it('ranks the chunks holding both words of a two-word query first', async () => {
    const hits = await index.search({ query: `${a} ${b}`, filters: {}, access: ALL, limit: 10 });
    expect(hits.map((h) => h.document_id.split('-')[0])).toEqual(Array(10).fill('ab'));
    expectSameRanking(hits, exhaustiveBm25(await loadCorpus(t.deps.db), [a, b]));
    const size = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM search_champions WHERE term = ${a}`.execute(t.deps.db);
    expect(size.rows[0]!.n).toBe(100);
  });
});

describe('champion lists keep at most a few copies of one passage', () => {
  const t = useTestRuntime();
  const [a, b, filler, ...unique] = vocabulary(400) as [string, string, string, ...string[]];
  // At most 10 copies of one passage (the default).
  const limits = LISTS_ONLY;
  let index: PostgresSearchIndex;
  const pad = (i: number) => String(i).padStart(3, '0');
  // Ten words per chunk, one title word: weights differ by how often a word occurs (and by the
  // average lengths when the chunk was written).
  const chunk = (id: string, words: string[]) => ({
    id,
    title: filler,
    content: [...words, ...Array(10 - words.length).fill(filler)].join(' '),
  });
  /** Exhaustive BM25 over the stored weights (here: with the average lengths of their time). */
  const exhaustive = async (terms: string[]) => {
    const stats = await searchRepository.queryTerms(t.deps.db, terms);
    const plan = planQuery(stats.chunks, stats.terms, { ...DEFAULT_PLAN_LIMITS, ...limits });
    return (
      await searchRepository.bm25SearchAll(t.deps.db, {
        plan,
        must: null,
        filters: {},
        access: ALL,
        limit: 10,
      })
    ).map((h) => ({ id: h.document_id, score: h.score }));
  };
  const listOf = async (term: string) =>
    (
      await sql<{ id: string; weight: number }>`
        SELECT document_id AS id, weight::float8 AS weight FROM search_champions WHERE term = ${term}
        ORDER BY weight DESC, document_id`.execute(t.deps.db)
    ).rows;

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db, { limits });
    // Weighted as before migration 0035 (or before maintenance first records the averages, which is
    // not run here): each chunk with the average lengths folded when it was written, so that copies of
    // one passage written at two moments weigh differently. Twenty chunks first give the averages.
    const fold = () => searchRepository.foldTermDeltas(t.deps.db);
    await insertDocuments(
      t.deps.db,
      Array.from({ length: 20 }, (_, i) => chunk(`f-${pad(i)}`, [])),
    );
    await fold();
    // The best passage for each word alone, copied under 60 documents (the same page in several
    // sources); the passage best for both words, below each word's best; and 150 chunks holding each
    // word once (each its own text).
    await insertDocuments(t.deps.db, [
      ...Array.from({ length: 30 }, (_, i) => chunk(`xa-${pad(i)}`, [a, a, a])),
      ...Array.from({ length: 60 }, (_, i) => chunk(`xb-${pad(i)}`, [b, b, b])),
      chunk('both', [a, a, b, b]),
      ...Array.from({ length: 150 }, (_, i) => chunk(`a1-${pad(i)}`, [a, unique[i]!])),
      ...Array.from({ length: 150 }, (_, i) => chunk(`b1-${pad(i)}`, [b, unique[i + 150]!])),
    ]);
    await fold();
    // Longer chunks shift the average length: the copies of a's passage written next weigh a little more.
    await insertDocuments(
      t.deps.db,
      Array.from({ length: 40 }, (_, i) => ({
        id: `long-${pad(i)}`,
        title: filler,
        content: Array.from({ length: 20 }, (_, j) => unique[(i + j) % unique.length]).join(' '),
      })),
    );
    await fold();
    await insertDocuments(
      t.deps.db,
      Array.from({ length: 30 }, (_, i) => chunk(`xa-${pad(30 + i)}`, [a, a, a])),
    );
    await fold();
    // The lists as of now (maintenance rebuilds a list once its term's frequency moved by a quarter).
    for (const term of [a, b]) {
      const [stats] = (await searchRepository.queryTerms(t.deps.db, [term])).terms;
      await searchRepository.buildChampions(t.deps.db, term, stats!.df, limits.champions);
    }
  });
  afterAll(async () => {
    await index?.close();
  });

  it('finds the passage best for two words together, which the copies of each word’s best kept off the lists', async () => {
    const hits = await index.search({ query: `${a} ${b}`, filters: {}, access: ALL, limit: 10 });
    expect(hits[0]!.document_id).toBe('both');
    expectSameRanking(hits, await exhaustive([a, b]));
    // Each list: 10 copies of the word's best passage, then other passages.
    for (const term of [a, b]) {
      const list = await listOf(term);
      expect(list).toHaveLength(20);
      expect(list.filter((p) => p.id.startsWith('x')).length).toBe(10);
      expect(list.map((p) => p.id)).toContain('both');
    }
  });

  it('keeps the copies that weigh most, so that a word’s top 10 is still exact', async () => {
    // The copies written later weigh more (the test's premise), and are the ones listed.
    const all = await sql<{ id: string; weight: number }>`
      SELECT document_id AS id, bm25_weights[array_position(bm25_terms, ${a}::text)]::float8 AS weight
      FROM chunks WHERE document_id LIKE 'xa-%' ORDER BY weight DESC, document_id`.execute(t.deps.db);
    expect(new Set(all.rows.map((r) => r.weight)).size).toBeGreaterThan(1);
    expect((await listOf(a)).filter((p) => p.id.startsWith('xa')).map((p) => p.id)).toEqual(
      all.rows.slice(0, 10).map((r) => r.id),
    );
    const hits = await index.search({ query: a, filters: {}, access: ALL, limit: 10 });
    expect(hits.map((h) => h.document_id)).toEqual((await exhaustive([a])).map((e) => e.id));
  });

  it('builds the same lists one term at a time, in one pass over the chunks, and in short steps', async () => {
    const db = t.deps.db;
    const terms = [
      { term: a, df: 361, size: 20 },
      { term: b, df: 211, size: 20 },
    ];
    const lists = async () => ({ a: await listOf(a), b: await listOf(b) });
    for (const term of terms) await searchRepository.buildChampions(db, term.term, term.df, term.size);
    const oneByOne = await lists();
    expect(oneByOne.a.map((p) => p.id)).toContain('both');
    // Small ranges of pages, so that floors and the copies' bars rise between them.
    await searchRepository.buildChampionsTogether(db, terms, { firstPages: 1, maxPages: 2 });
    expect(await lists()).toEqual(oneByOne);
    await searchRepository.buildChampionsInSteps(db, terms, { firstPages: 1, stepMs: 1e6 });
    expect(await lists()).toEqual(oneByOne);
  });
});

describe('champion lists follow the documents written after they were built', () => {
  const t = useTestRuntime();
  const [a, b, ...filler] = vocabulary(60) as [string, string, ...string[]];
  // Lists of 20, scored only through them (no growth with frequency), and the intersection arm for a
  // query of both words.
  const limits = {
    champions: 20,
    championsGrowthDf: 1_000_000,
    alwaysFullDf: 25,
    fullBudget: 0,
    scoredChampions: 0,
    buildOnDemandDf: 1000,
    conjunctiveBudget: 1_000_000,
  };
  let index: PostgresSearchIndex;
  const fill = (i: number, n: number) =>
    Array.from({ length: n }, (_, j) => filler[(i * 7 + j) % filler.length]).join(' ');
  const listOf = async (term: string) =>
    (
      await sql<{ id: string }>`SELECT document_id AS id FROM search_champions WHERE term = ${term}`.execute(
        t.deps.db,
      )
    ).rows.map((r) => r.id);
  const search = (query: string) => index.search({ query, filters: {}, access: ALL, limit: 10 });
  const stateOf = async (words: string[]) => {
    const stats = await searchRepository.queryTerms(t.deps.db, words);
    return { stats, plan: planQuery(stats.chunks, stats.terms, { ...DEFAULT_PLAN_LIMITS, ...limits }) };
  };
  const rewrite = async (id: string, content: string) => {
    await sql`DELETE FROM chunks WHERE document_id = ${id}`.execute(t.deps.db);
    await sql`
      INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
      VALUES (${id}, 0, ${fill(1, 1)}, ${content}, '', NULL, 100)`.execute(t.deps.db);
  };

  beforeAll(async () => {
    index = createPostgresSearchIndex(t.deps.db, { limits });
    // Ten chunks hold both words four times, twenty three times (the lists' 20 hold the ten and ten
    // of these), 150 each word once.
    const docs = [
      ...Array.from({ length: 10 }, (_, i) => ({
        id: `four-${i}`,
        content: `${a} ${a} ${a} ${a} ${b} ${b} ${b} ${b} ${fill(i, 4)}`,
      })),
      ...Array.from({ length: 20 }, (_, i) => ({
        id: `three-${i}`,
        content: `${a} ${a} ${a} ${b} ${b} ${b} ${fill(i + 10, 6)}`,
      })),
      ...[a, b].flatMap((word) =>
        Array.from({ length: 150 }, (_, i) => ({
          id: `${word}-${i}`,
          content: `${word} ${fill(i + 30, 11)}`,
        })),
      ),
    ].map((d, i) => ({ ...d, title: fill(i + 3, 1) }));
    await insertDocuments(t.deps.db, docs);
    await index.maintain();
  });
  afterAll(async () => {
    await index?.close();
  });

  it('puts a chunk written after its lists were built on them, once maintenance has run', async () => {
    expect(await listOf(a)).toHaveLength(20);
    const builtAt = (await stateOf([a])).stats.terms[0]!.champions_df;
    await insertDocuments(t.deps.db, [
      { id: 'new-a', title: fill(2, 1), content: `${a} ${a} ${a} ${a} ${a} ${a}` },
    ]);
    // Before: on no list, so a query of the frequent word alone does not see it.
    expect((await stateOf([a])).stats.listsBehind).toBe(true);
    expect((await search(a)).map((h) => h.document_id)).not.toContain('new-a');
    await index.maintain();
    expect((await stateOf([a])).stats.listsBehind).toBe(false);
    expect(await listOf(a)).toContain('new-a');
    // Put there, not by a rebuild of the list.
    expect((await stateOf([a])).stats.terms[0]!.champions_df).toBe(builtAt);
    const hits = await search(a);
    expect(hits[0]!.document_id).toBe('new-a');
    expectSameRanking(hits, exhaustiveBm25(await loadCorpus(t.deps.db), [a]));
  });

  it('puts a document written again back on its lists (replacing its chunks took it off them)', async () => {
    await rewrite('four-3', `${a} ${a} ${a} ${a} ${a} ${b} ${b} ${b} ${b} ${b} ${fill(3, 2)}`);
    expect(await listOf(a)).not.toContain('four-3');
    await index.maintain();
    expect(await listOf(a)).toContain('four-3');
    expect(await listOf(b)).toContain('four-3');
  });

  it('skips the intersection only when the lists settle the top results, ranking as exhaustive BM25 does', async () => {
    const { stats, plan } = await stateOf([a, b]);
    expect(plan.conjunctive).toEqual(expect.arrayContaining([a, b]));
    expect(listsCurrent(plan, stats)).toBe(true);
    const hits = await search(`${a} ${b}`);
    // The lists' 10th best holds both words four times: no chunk weighing at most each list's floor
    // (three times) can reach it.
    expect(settledByLists(plan, stats, hits[9]!.score)).toBe(true);
    // Chunks written since the first weigh with the averages of their time (within 0.1 %).
    expectSameRanking(hits, exhaustiveBm25(await loadCorpus(t.deps.db), [a, b]), 2);
    // A chunk holding both words more often than any, written now: on no list until maintenance runs,
    // found at once through the intersection arm (the lists are behind, so it runs).
    await insertDocuments(t.deps.db, [
      { id: 'new-ab', title: fill(5, 1), content: `${a} ${a} ${a} ${a} ${a} ${b} ${b} ${b} ${b} ${b}` },
    ]);
    const behind = await stateOf([a, b]);
    expect(listsCurrent(behind.plan, behind.stats)).toBe(false);
    expect((await search(`${a} ${b}`))[0]!.document_id).toBe('new-ab');
    await index.maintain();
    const after = await search(`${a} ${b}`);
    expect(after[0]!.document_id).toBe('new-ab');
    expectSameRanking(after, exhaustiveBm25(await loadCorpus(t.deps.db), [a, b]), 2);
  });

  it('counts the highest document boost in what a chunk on no list can score', async () => {
    expect((await stateOf([a])).stats.maxBoost).toBe(1);
    await insertDocuments(t.deps.db, [
      { id: 'boosted', title: fill(6, 1), content: `${a} ${b} ${fill(6, 8)}`, boost: 4 },
    ]);
    const { stats, plan } = await stateOf([a, b]);
    expect(stats.maxBoost).toBeCloseTo(2 ** Math.tanh(2), 5);
    // The same 10th best no longer settles it: a boosted chunk on no list could pass it.
    const kth = bound(plan) * 1.01;
    expect(settledByLists(plan, { ...stats, listsBehind: false }, kth)).toBe(false);
    expect(settledByLists(plan, { ...stats, listsBehind: false, maxBoost: 1 }, kth)).toBe(true);
    await sql`DELETE FROM documents WHERE id = 'boosted'`.execute(t.deps.db);
  });

  it.runIf(testDbKind() === 'postgres')(
    'does not put written chunks on the lists while a list is being built, but after',
    async () => {
      await insertDocuments(t.deps.db, [
        { id: 'during-build', title: fill(8, 1), content: `${a} ${a} ${a} ${a} ${a} ${a} ${a} ${a}` },
      ]);
      await t.deps.db.transaction().execute(async (trx) => {
        // What a build holds for its transaction (buildChampions, buildChampionsTogether).
        await sql`SELECT pg_advisory_xact_lock_shared(${0x6b61_7301})`.execute(trx);
        expect(await searchRepository.foldWrittenDocuments(t.deps.db, 10)).toBeUndefined();
      });
      expect((await stateOf([a])).stats.listsBehind).toBe(true);
      await index.maintain();
      expect(await listOf(a)).toContain('during-build');
    },
  );

  it('after a bulk load, marks the lists for rebuilding instead of following each written document', async () => {
    await insertDocuments(t.deps.db, [
      { id: 'bulk-a', title: fill(7, 1), content: `${a} ${a} ${a} ${a} ${a} ${a} ${a}` },
    ]);
    await searchRepository.rebuildListsForWrites(t.deps.db);
    const { stats } = await stateOf([a]);
    expect(stats.listsBehind).toBe(false);
    expect(stats.terms[0]!.champions_df).toBe(1);
    expect(
      listsCurrent(planQuery(stats.chunks, stats.terms, { ...DEFAULT_PLAN_LIMITS, ...limits }), stats),
    ).toBe(false);
    await index.maintain();
    expect(await listOf(a)).toContain('bulk-a');
    expect((await stateOf([a])).stats.terms[0]!.champions_df).toBeGreaterThan(1);
  });
});
