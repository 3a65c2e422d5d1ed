import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { testDbKind } from '../testing/test-runtime.ts';
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

/** Chunks of the documents whose stored vector differs from the one their insert statement computes. */
async function differing(label: string): Promise<number> {
  const rows = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM chunks
    WHERE document_id LIKE ${`${label}-%`}
      AND search_vector IS DISTINCT FROM
        setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'D')`.execute(
    t.deps.db,
  );
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
