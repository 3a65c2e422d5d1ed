import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Db, inBackground } from '../db/database.ts';
import { createLogger } from '../logger.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { testDbKind } from '../testing/test-runtime.ts';
import { createPostgresSearchIndex, type PostgresSearchIndex } from './postgres.ts';
import {
  foldTermDeltas,
  lengthStatistics,
  recordLengthsForReweighting,
  reweightChunks,
} from './search.repository.ts';

/** Documents of one chunk, `words` words of content and a title of `titleWords`, straight into the tables. */
async function insertChunks(db: Db, from: number, count: number, words: number, titleWords: number) {
  const ids = Array.from({ length: count }, (_, i) => `doc-${from + i}`);
  const text = (n: number, seed: number) =>
    Array.from({ length: n }, (_, i) => `word${(seed * 7 + i) % 97}x`).join(' ');
  await db.transaction().execute(async (trx) => {
    await sql`
      INSERT INTO documents (id, semantic_id, title, source, from_ingestion_api, doc_updated_at, content_hash,
        chunk_count, is_public, access_user_ids, access_group_ids, tags)
      SELECT id, id, id, 'file', true, now(), '', 1, true, '{}', '{}', '{}' FROM unnest(${ids}::text[]) AS t(id)`.execute(
      trx,
    );
    await sql`
      INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
      SELECT id, 0, title, content, '', NULL, 100
      FROM unnest(${ids}::text[], ${ids.map((_, i) => text(titleWords, from + i + 1))}::text[],
        ${ids.map((_, i) => text(words, from + i))}::text[]) AS t(id, title, content)`.execute(trx);
  });
}

/** Re-weights every chunk `reweightChunks` walks, in batches of `batch`; returns the batches that held chunks. */
async function reweightAll(db: Db, batch: number, writtenBefore: string | undefined): Promise<number> {
  let batches = 0;
  for (let after = await reweightChunks(db, null, batch, writtenBefore); after; batches++)
    after = await reweightChunks(db, after, batch, writtenBefore);
  return batches;
}

describe('re-weighting after loads', () => {
  const t = useTestRuntime();
  let index: PostgresSearchIndex;
  const rounds: { reweighted: boolean; vacuum: string }[] = [];

  beforeAll(() => {
    // The index logs each maintenance round's steps at debug level.
    const lines = new Writable({
      write(line, _encoding, done) {
        const entry = JSON.parse(line.toString()) as { msg: string; reweighted?: boolean; vacuum?: string };
        if (entry.msg === 'search index maintenance round')
          rounds.push({ reweighted: entry.reweighted!, vacuum: entry.vacuum! });
        done();
      },
    });
    const logger = createLogger({ KAS_LOG_LEVEL: 'debug', KAS_LOG_FORMAT: 'json' }, lines);
    index = createPostgresSearchIndex(t.deps.db, { logger });
  });
  afterAll(async () => {
    await index?.close();
  });
  /** No chunks and no statistics, as on a new deployment. */
  const emptyIndex = async () => {
    await sql`DELETE FROM documents`.execute(t.deps.db);
    await index.maintain();
    await sql`DELETE FROM search_terms`.execute(t.deps.db);
  };

  it('does not re-weight a load whose chunks were weighted with the real average lengths, and does once they drift', async () => {
    // Chunks as long as the averages the database assumes before it has counted 20 chunks (120 and 6
    // positions), folded every 100 chunks as maintenance does during a load.
    for (let i = 0; i < 400; i += 100) {
      await insertChunks(t.deps.db, i, 100, 120, 6);
      await index.maintain();
    }
    expect(rounds.length).toBeGreaterThanOrEqual(4);
    expect(rounds.some((r) => r.reweighted)).toBe(false);
    const loaded = await lengthStatistics(t.deps.db);
    expect(loaded.weightedLength).toBeCloseTo(120, 0);
    expect(loaded.weightedTitleLength).toBeCloseTo(6, 1);

    // Much longer chunks move the average: the chunks weighted before hold averages a quarter off.
    rounds.length = 0;
    await insertChunks(t.deps.db, 400, 400, 240, 6);
    await index.maintain();
    await index.maintain();
    expect(rounds.filter((r) => r.reweighted)).toHaveLength(1);
    const after = await lengthStatistics(t.deps.db);
    expect(after.weightedLength).toBeCloseTo(after.length, 0);
  });

  it('re-weights during writes but leaves the vacuums of the statistics and chunks until writes are quiet', async () => {
    // Shorter chunks move the averages again; a write starts a background round a second later.
    rounds.length = 0;
    await insertChunks(t.deps.db, 800, 800, 30, 6);
    await index.indexDocuments([]);
    await vi.waitFor(() => expect(rounds).toHaveLength(1), { timeout: 10_000, interval: 100 });
    expect(rounds[0]).toEqual({ reweighted: true, vacuum: 'deltas' });
    // What the round left is done once writes are quiet (here: maintenance asked for).
    await index.maintain();
    expect(rounds[1]).toEqual({ reweighted: false, vacuum: 'statistics' });
  });

  it('folds an index without average lengths right after its first write (the chunks weighted with assumed ones are few)', async () => {
    const fresh = createPostgresSearchIndex(t.deps.db);
    try {
      await emptyIndex();
      await insertChunks(t.deps.db, 2000, 30, 120, 6);
      const written = Date.now();
      await fresh.indexDocuments([]);
      // Any later write would get the real averages: well before the second an older index waits.
      await vi.waitFor(async () => expect((await lengthStatistics(t.deps.db)).chunks).toBe(30), {
        timeout: 700,
        interval: 20,
      });
      expect(Date.now() - written).toBeLessThan(1000);
    } finally {
      await fresh.close();
    }
  });

  it('weights the same text the same whenever it is written: every chunk after the first round with the averages recorded then', async () => {
    await emptyIndex();
    rounds.length = 0;
    const copy = async (id: string) => {
      await sql`
        INSERT INTO documents (id, semantic_id, title, source, from_ingestion_api, doc_updated_at, content_hash,
          chunk_count, is_public, access_user_ids, access_group_ids, tags)
        VALUES (${id}, ${id}, ${id}, 'file', true, now(), '', 1, true, '{}', '{}', '{}')`.execute(t.deps.db);
      await sql`
        INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
        VALUES (${id}, 0, 'Airship mooring', 'The zeppelin moored at the mast of the old tower at dawn.', '', NULL, 20)`.execute(
        t.deps.db,
      );
    };
    await insertChunks(t.deps.db, 3000, 100, 120, 6);
    await index.maintain();
    await copy('copy-early');
    // Longer chunks move today's average content length by ~4 %: not enough to re-weight.
    await insertChunks(t.deps.db, 3100, 100, 130, 6);
    await index.maintain();
    const moved = await lengthStatistics(t.deps.db);
    expect(moved.length).toBeGreaterThan(124);
    expect(rounds.some((r) => r.reweighted)).toBe(false);
    await copy('copy-late');
    const stored = await sql<{ document_id: string; weights: number[] }>`
      SELECT document_id, bm25_weights AS weights FROM chunks WHERE document_id LIKE 'copy-%' ORDER BY document_id`.execute(
      t.deps.db,
    );
    expect(stored.rows.map((r) => r.document_id)).toEqual(['copy-early', 'copy-late']);
    expect(stored.rows[1]!.weights).toEqual(stored.rows[0]!.weights);
    const hits = await index.search({
      query: 'zeppelin mooring',
      filters: {},
      access: { all: true },
      limit: 2,
    });
    expect(hits.map((h) => h.document_id).sort()).toEqual(['copy-early', 'copy-late']);
    expect(hits[1]!.score).toBe(hits[0]!.score);
  });

  it('re-weights only the chunks written before the averages were recorded, and a boost change weights its chunks anew', async () => {
    await emptyIndex();
    // Weighted with the assumed averages (nothing counted yet), then counted.
    await insertChunks(t.deps.db, 5000, 40, 240, 12);
    await foldTermDeltas(t.deps.db);
    const stats = await lengthStatistics(t.deps.db);
    const before = await recordLengthsForReweighting(t.deps.db, stats.length, stats.titleLength);
    // Written while a re-weighting would walk: with the recorded averages already.
    await insertChunks(t.deps.db, 5040, 40, 240, 12);
    // A boost changed meanwhile writes a new version of its document's chunk.
    await sql`UPDATE documents SET boost = 2 WHERE id = 'doc-5001'`.execute(t.deps.db);
    const versions = async () =>
      new Map(
        (
          await sql<{ document_id: string; xmin: string }>`
            SELECT document_id, xmin::text AS xmin FROM chunks WHERE document_id LIKE 'doc-50%'`.execute(
            t.deps.db,
          )
        ).rows.map((r) => [r.document_id, r.xmin]),
      );
    const stale = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM chunks c, kas_bm25_weights(c.search_vector) w
      WHERE c.bm25_weights IS DISTINCT FROM w.weights`;
    expect((await stale.execute(t.deps.db)).rows[0]!.n).toBe(39);
    const was = await versions();
    // The walk reads the 39 chunks written before (in batches of 7), not the 40 after.
    expect(await reweightAll(t.deps.db, 7, before)).toBe(6);
    const now = await versions();
    expect((await stale.execute(t.deps.db)).rows[0]!.n).toBe(0);
    const rewritten = [...now].filter(([id, xmin]) => was.get(id) !== xmin).map(([id]) => id);
    // Each chunk written before, apart from the boosted one (weighted by its update); none written after.
    expect(rewritten.sort()).toEqual(
      Array.from({ length: 40 }, (_, i) => `doc-${5000 + i}`)
        .filter((id) => id !== 'doc-5001')
        .sort(),
    );
  });

  it("folds a young index's first writes within seconds while writes go on (later chunks get the real averages)", async () => {
    const young = createPostgresSearchIndex(t.deps.db);
    try {
      await emptyIndex();
      // A write every 200 ms for 3 s: an older index postpones maintenance for up to 15 s meanwhile.
      for (let i = 0; i < 15; i++) {
        await insertChunks(t.deps.db, 1000 + i * 10, 10, 120, 6);
        await young.indexDocuments([]);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect((await lengthStatistics(t.deps.db)).chunks).toBeGreaterThanOrEqual(20);
    } finally {
      await young.close();
    }
  });
});

describe.runIf(testDbKind() === 'postgres')('re-weighting beside a writer', () => {
  const t = useTestRuntime();

  it('records the averages without waiting for a transaction writing chunks, and then walks every chunk', async () => {
    await insertChunks(t.deps.db, 0, 30, 240, 12);
    await foldTermDeltas(t.deps.db);
    const stats = await lengthStatistics(t.deps.db);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const writing = new Promise<void>((resolve) => {
      locked = resolve;
    });
    // What an ingestion transaction holds on the chunks while it writes.
    const writer = t.deps.db.transaction().execute(async (trx) => {
      await sql`LOCK TABLE chunks IN ROW EXCLUSIVE MODE`.execute(trx);
      locked();
      await held;
    });
    try {
      await writing;
      const started = performance.now();
      expect(await recordLengthsForReweighting(t.deps.db, stats.length, stats.titleLength)).toBeUndefined();
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      release();
      await writer;
    }
    expect((await lengthStatistics(t.deps.db)).weightedLength).toBeCloseTo(stats.length, 0);
    expect(await reweightAll(t.deps.db, 10, undefined)).toBe(3);
    // Once nobody writes, the id from which chunks hold the averages.
    expect(await recordLengthsForReweighting(t.deps.db, stats.length, stats.titleLength)).toMatch(/^\d+$/);
  });
});

describe.runIf(testDbKind() === 'postgres')('re-weighting beside bulk writers', () => {
  // One background turn, as on a machine of two cores.
  const t = useTestRuntime({ KAS_BACKGROUND_STATEMENTS: '1' });

  it('records the averages without queueing for a background turn', async () => {
    await insertChunks(t.deps.db, 0, 10, 240, 12);
    await foldTermDeltas(t.deps.db);
    const stats = await lengthStatistics(t.deps.db);
    // A bulk writer holds the turn: had it been waiting for the recording's lock, the recording's
    // statements would have waited for the turn until the gate's bound (2 s), each.
    const writer = inBackground(() => sql`SELECT pg_sleep(3)`.execute(t.deps.db));
    await vi.waitFor(() => expect(t.deps.dbGate?.backgroundInFlight).toBe(1));
    const started = performance.now();
    const cut = await inBackground(() =>
      recordLengthsForReweighting(t.deps.db, stats.length, stats.titleLength),
    );
    expect(performance.now() - started).toBeLessThan(1000);
    expect(cut).toMatch(/^\d+$/);
    await writer;
  });
});

describe.runIf(testDbKind() === 'postgres')('the full-text index after writes', () => {
  const t = useTestRuntime();

  it('merges the entries writes left pending in the full-text index once writes are quiet (every search read them)', async () => {
    const index = createPostgresSearchIndex(t.deps.db);
    try {
      await insertChunks(t.deps.db, 0, 300, 120, 6);
      await index.maintain();
      // The pages a merge would clean now: none left.
      const pending = await sql<{ pages: number }>`
        SELECT gin_clean_pending_list('chunks_search_idx'::regclass)::int AS pages`.execute(t.deps.db);
      expect(pending.rows[0]!.pages).toBe(0);
    } finally {
      await index.close();
    }
  });
});
