import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as documentsRepository from './documents.repository.ts';
import { prepareDocument, rowFor } from './service/prepare.ts';

const t = useTestRuntime();

const WORDS = 'heron egret wombat quokka census burrow marsh estuary tide reed'.split(' ');

/** A document of a few chunks, its words varying with `i`. */
function document(i: number) {
  const words = Array.from({ length: 900 }, (_, k) => `${WORDS[(i * 7 + k * 3) % WORDS.length]}${k % 13}`);
  return prepareDocument({
    document: {
      id: `counted-${i}`,
      semantic_identifier: `Field notes ${i}`,
      sections: [{ text: words.join(' '), link: null }],
    },
    cc_pair_id: null,
  });
}

describe('search statistics of new documents written in several statements', () => {
  it('are counted once for the whole write, exactly as the chunks hold them', async () => {
    const pairId = (await documentsRepository.systemIngestionPairId(t.deps.db))!;
    const pair = (await documentsRepository.findCcPairAccess(t.deps.db, pairId))!;
    const prepared = Array.from({ length: 6 }, (_, i) => document(i));
    expect(prepared.reduce((n, p) => n + p.chunks.length, 0)).toBeGreaterThan(6);
    const rollback = new Error('rollback');
    await t.deps.db
      .transaction()
      .execute(async (trx) => {
        await documentsRepository.insertNewDocuments(
          trx,
          prepared.map((p) => ({ row: rowFor(p, pair), chunks: p.chunks, ccPairId: pairId })),
          2,
        );
        const ids = prepared.map((p) => p.row.id);
        const { rows } = await sql<{ term: string; delta: number; rows: number; actual: number | null }>`
          -- This transaction's rows (uncommitted: no maintenance round folds them meanwhile).
          WITH mine AS (SELECT * FROM search_term_deltas WHERE xmin = pg_current_xact_id()::xid),
          actual AS (
            SELECT t AS term, count(*)::float8 AS n FROM chunks, unnest(bm25_terms) AS t
            WHERE document_id = ANY(${ids}::text[]) GROUP BY t
            UNION ALL SELECT E'\\x01n', count(*)::float8 FROM chunks WHERE document_id = ANY(${ids}::text[])
            UNION ALL SELECT E'\\x01len', sum(bm25_length)::float8 FROM chunks WHERE document_id = ANY(${ids}::text[])
            UNION ALL SELECT E'\\x01tlen', sum(bm25_title_length)::float8 FROM chunks WHERE document_id = ANY(${ids}::text[])
          )
          SELECT coalesce(m.term, a.term) AS term, m.delta::float8 AS delta, m.rows::int AS rows, a.n AS actual
          FROM (SELECT term, sum(delta) AS delta, count(*) AS rows FROM mine GROUP BY term) m
          FULL JOIN actual a ON a.term = m.term`.execute(trx);
        expect(rows.length).toBeGreaterThan(20);
        for (const row of rows) {
          // One row per term: the statements' counts were not appended one by one.
          expect(row, row.term).toMatchObject({ delta: row.actual, rows: 1 });
        }
        throw rollback;
      })
      .catch((error: unknown) => {
        if (error !== rollback) throw error;
      });
  });
});

describe('the search index of chunks inserted by ingestion', () => {
  /** A few ~300-word documents; more than 20 chunks in all, so the weights use real average lengths. */
  const input = (i: number, text?: string) => {
    const words = Array.from({ length: 700 }, (_, k) => `${WORDS[(i * 5 + k * k) % WORDS.length]}${k % 17}`);
    return {
      id: `indexed-${i}`,
      semantic_identifier: `Survey ${i} of the ${WORDS[i % WORDS.length]}`,
      sections: [{ text: text ?? words.join(' '), link: null }],
    };
  };

  it('is, to the bit, what the row trigger computes for the same chunks', async () => {
    // One at a time (each its own statement) and several in one group commit.
    for (let i = 0; i < 4; i++) await t.admin().documents.ingest({ document: input(i) });
    await t.admin().documents.ingestBatch({ documents: Array.from({ length: 8 }, (_, i) => input(4 + i)) });
    await t.deps.search.maintain?.();
    // A boosted document replaced: its new chunks read the boost in their statement.
    await sql`UPDATE documents SET boost = 3 WHERE id = 'indexed-3'`.execute(t.deps.db);
    await t.admin().documents.ingest({ document: input(3, 'marsh heron tide census. reed burrow estuary') });
    const columns = sql`document_id, chunk_id, search_vector::text AS vector, bm25_terms::text AS terms,
      bm25_weights::text AS weights, bm25_length AS len, bm25_title_length AS tlen, bm25_boost AS boost`;
    const stored = await sql<Record<string, unknown>>`SELECT ${columns} FROM chunks
      ORDER BY document_id, chunk_id`.execute(t.deps.db);
    expect(stored.rows.length).toBeGreaterThan(20);
    expect(stored.rows.find((r) => r.document_id === 'indexed-3')?.boost).not.toBe(1);
    const rollback = new Error('rollback');
    await t.deps.db
      .transaction()
      .execute(async (trx) => {
        // An update of the title (to the same value) makes the row trigger compute them again.
        await sql`UPDATE chunks SET title = title`.execute(trx);
        const recomputed = await sql<Record<string, unknown>>`SELECT ${columns} FROM chunks
          ORDER BY document_id, chunk_id`.execute(trx);
        expect(recomputed.rows).toEqual(stored.rows);
        throw rollback;
      })
      .catch((error: unknown) => {
        if (error !== rollback) throw error;
      });
  });
});
