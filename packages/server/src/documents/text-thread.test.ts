import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { testDbKind } from '../testing/test-runtime.ts';
import * as documentsRepository from './documents.repository.ts';
import * as documentsService from './documents.service.ts';

// Words the default parser and the English stemmer treat each in their own way.
const TEXTS = [
  "The heron's wading: don't stop at 1.5 or v2.0.1, write to foo@example.com.",
  'See https://example.org/a/b?c=1 and /usr/local/bin; caf\u00e9 na\u00efve \u00fcber stra\u00dfe \u65e5\u672c\u8a9e.',
  'Running runners ran; the <b>bold</b> &amp; brave -- self-contained well-known 3,000 +7 -0.25e3.',
];

const documents = (label: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    document: {
      id: `${label}-${i}`,
      semantic_identifier: `Marsh ${label} ${i}: the heron's notes`,
      sections: [{ text: `${TEXTS[i % TEXTS.length]} Paragraph ${i} of ${label}.`, link: null }],
    },
  }));

async function ingest(label: string, count: number) {
  const settled = await documentsService.ingestMany({ ctx: t.deps, documents: documents(label, count) });
  expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
}

/**
 * Chunks of the documents whose stored vector, terms or lengths differ from those their insert statement
 * computes (the weights depend on the averages of the moment, which folds change meanwhile).
 */
async function differing(label: string): Promise<number> {
  const rows = await sql<{ n: number }>`
    SELECT count(*)::int AS n
    FROM chunks c, LATERAL kas_bm25_weights(
      setweight(to_tsvector('english', c.title), 'A') || setweight(to_tsvector('english', c.content), 'D')) w
    WHERE c.document_id LIKE ${`${label}-%`}
      AND (c.search_vector IS DISTINCT FROM
          setweight(to_tsvector('english', c.title), 'A') || setweight(to_tsvector('english', c.content), 'D')
        OR c.bm25_terms IS DISTINCT FROM w.terms OR c.bm25_length <> coalesce(w.len, 0)
        OR c.bm25_title_length <> coalesce(w.tlen, 0))`.execute(t.deps.db);
  return rows.rows[0]!.n;
}

const t = useTestRuntime({ KAS_PGLITE_TEXT_THREAD: 'true' });

describe.runIf(testDbKind() === 'pglite')('the text thread', () => {
  it('starts for a bulk load, and the chunks it vectorises are stored as the statement computes them', async () => {
    const thread = t.deps.textThread!;
    expect(thread.running).toBe(false);
    // A document at a time does not start it.
    await ingest('single', 1);
    expect(thread.running).toBe(false);
    // A batch does; its chunks are vectorised by the statement while it starts.
    await ingest('first', 40);
    await vi.waitFor(() => expect(thread.running).toBe(true), { timeout: 30_000, interval: 100 });
    const before = t.deps.ingestion.vectors.vectorised;
    await ingest('second', 60);
    expect(t.deps.ingestion.vectors.vectorised - before).toBe(60);
    for (const label of ['single', 'first', 'second']) expect(await differing(label)).toBe(0);
    const found = await t.admin().search.adminSearch({ query: 'wading herons', filters: {} });
    expect(found.documents.some((d) => d.document_id.startsWith('second-'))).toBe(true);
  });

  it('leaves the vectors to the statement once the thread failed, and the documents are written', async () => {
    const thread = t.deps.textThread!;
    await vi.waitFor(() => expect(thread.running).toBe(true), { timeout: 30_000, interval: 100 });
    thread.failed(new Error('the thread stopped'));
    expect(thread.running).toBe(false);
    const before = t.deps.ingestion.vectors.vectorised;
    await ingest('after', 40);
    expect(t.deps.ingestion.vectors.vectorised).toBe(before);
    expect(await differing('after')).toBe(0);
    const rows = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM documents WHERE id LIKE 'after-%'`.execute(t.deps.db);
    expect(rows.rows[0]!.n).toBe(40);
  });
});

describe('vectors and term frequencies computed before the write', () => {
  it('weigh a chunk as the statement does from its vector alone', async () => {
    const chunks = [
      ...TEXTS.map((content, i) => ({ title: `Title ${i}: heron's marsh`, content })),
      { title: '', content: 'heron heron heron wading' },
      { title: 'Heron heron', content: '' },
      { title: '', content: '' },
      { title: '...', content: '-- !! --' },
    ];
    // Where the text thread computes them; here on the database itself.
    const given = await documentsRepository.textVectors(t.deps.db, chunks);
    expect(given).toHaveLength(chunks.length);
    const rows = await sql<{ same: boolean; terms: string[] }>`
      SELECT a IS NOT DISTINCT FROM b AS same, b.terms
      FROM unnest(${given.map((g) => g.vector)}::text[], ${given.map((g) => g.tfs)}::text[],
          ${given.map((g) => g.ttfs)}::text[]) WITH ORDINALITY AS u(v, tf, ttf, i),
        LATERAL kas_bm25_weights(u.v::tsvector) a,
        LATERAL kas_bm25_weights_of(u.v::tsvector, u.tf::int[], u.ttf::int[]) b
      ORDER BY u.i`.execute(t.deps.db);
    expect(rows.rows.map((r) => r.same)).toEqual(chunks.map(() => true));
    expect(rows.rows[3]!.terms).toEqual(['heron', 'wade']);
    expect(rows.rows[6]!.terms).toEqual([]);
  });
});
