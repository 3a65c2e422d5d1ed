import { beforeAll, describe, expect, it } from 'vitest';
import * as documentsService from '../documents/documents.service.ts';
import { toErrorResponse } from '../errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { chatMetrics, parseGoldenSet, searchMetrics } from './evaluation.service.ts';

describe('evaluation metrics', () => {
  it('computes recall@k, MRR@10 and nDCG@10 with binary relevance', () => {
    const metrics = searchMetrics([
      { ranked: ['a', 'b', 'c'], expected: new Set(['a']) },
      { ranked: ['x', 'y', 'b'], expected: new Set(['b']) },
      { ranked: ['x', 'y'], expected: new Set(['z']) },
      { ranked: ['q', 'r', 's', 't', 'u', 'v'], expected: new Set(['v', 'q']) },
    ]);
    expect(metrics.recall_at_1).toBe(0.5);
    expect(metrics.recall_at_5).toBe(0.75);
    expect(metrics.recall_at_10).toBe(0.75);
    expect(metrics.mrr_at_10).toBeCloseTo((1 + 1 / 3 + 0 + 1) / 4, 3);
    const ideal2 = 1 + 1 / Math.log2(3);
    expect(metrics.ndcg_at_10).toBeCloseTo(
      (1 + 1 / Math.log2(4) + 0 + (1 + 1 / Math.log2(7)) / ideal2) / 4,
      3,
    );
  });

  it('scores chat answers by their citations, counting failed turns as misses', () => {
    expect(
      chatMetrics([
        { cited: ['a', 'b'], expected: new Set(['a']) },
        { cited: ['x', 'b'], expected: new Set(['b']) },
        { cited: [], expected: new Set(['b']) },
        { cited: null, expected: new Set(['b']) },
      ]),
    ).toEqual({ cites_expected: 0.5, first_citation_expected: 0.25, failed: 1, answer_contains: null });
  });

  it('reads a golden set and names the lines it cannot read', () => {
    expect(parseGoldenSet('# comment\n{"question":"q?","document_ids":["d"]}\n\n')).toEqual([
      { question: 'q?', document_ids: ['d'] },
    ]);
    expect(() => parseGoldenSet('{"question":"q?"}\nnot json')).toThrow(
      /line 1: expected .*; line 2: not JSON/,
    );
    expect(() => parseGoldenSet('\n')).toThrow(/no questions/);
  });
});

describe('POST /api/admin/search/eval', () => {
  const t = useTestRuntime();
  beforeAll(async () => {
    const docs = [
      [
        'vacuum',
        'Routine vacuuming',
        'VACUUM reclaims storage occupied by dead tuples and prevents wraparound.',
      ],
      ['index', 'Creating indexes', 'CREATE INDEX CONCURRENTLY builds an index without locking out writes.'],
      ['backup', 'Backups', 'pg_dump writes a consistent archive of one database.'],
    ];
    for (const [id, title, text] of docs) {
      await documentsService.ingestDocument({
        ctx: t.deps,
        input: { document: { id: id!, semantic_identifier: title!, sections: [{ text: text! }] } },
      });
    }
  });

  it('reports search and chat figures through the services behind the API', async () => {
    const report = await t.caller(t.adminKey).evaluation.evaluate({
      cases: [
        { question: 'How do I build an index without locking writes?', document_ids: ['index'] },
        { question: 'What prevents wraparound?', document_ids: ['vacuum'] },
        { question: 'How do I write an archive of a database?', document_ids: ['backup'] },
        { question: 'Which zebra sings?', document_ids: ['backup'] },
      ],
    });
    expect(report.questions).toBe(4);
    expect(report.search.recall_at_1).toBe(0.75);
    expect(report.results[0]).toMatchObject({ first_expected_rank: 1 });
    expect(report.results[0]!.top_documents[0]).toBe('index');
    expect(report.results[3]!.first_expected_rank).toBeNull();
    // The built-in answerer cites what it found first.
    expect(report.chat).toEqual({
      cites_expected: 0.75,
      first_citation_expected: 0.75,
      failed: 0,
      answer_contains: null,
    });
    expect(report.results[0]!.cited_documents).toEqual(['index']);
    // Evaluation turns leave no chat sessions behind.
    const sessions = await t.deps.db.selectFrom('chat_sessions').select('id').execute();
    expect(sessions).toEqual([]);
  });

  it('is for admins only and validates its input', async () => {
    const basic = await t.createKey('basic');
    const forbidden = await t
      .caller(basic.key)
      .evaluation.evaluate({ cases: [{ question: 'q', document_ids: ['a'] }] })
      .catch(toErrorResponse);
    expect(forbidden).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
    const invalid = await t.caller(t.adminKey).evaluation.evaluate({ cases: [] }).catch(toErrorResponse);
    expect(invalid).toMatchObject({ status: 422, error_code: 'VALIDATION_ERROR' });
  });
});
