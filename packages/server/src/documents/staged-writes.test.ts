import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { chunkDocument } from './chunking.ts';
import * as documentsRepository from './documents.repository.ts';
import { discardPendingDocuments } from './documents.service.ts';

/** Numbered sentences with a word of their own: `chunks` chunks of 512 tokens, roughly. */
function longText(chunks: number, word: string): string {
  return Array.from({ length: chunks * 63 }, (_, i) => `${word} ${i % 1000} ${i % 997} ${i % 991}.`).join(
    '\n',
  );
}

/** Chunks of the document visible to readers (its row published), and chunks stored at all. */
async function chunkCounts(t: ReturnType<typeof useTestRuntime>, id: string) {
  const row = await sql<{ visible: number; stored: number; pending: boolean | null }>`
    SELECT
      (SELECT count(*)::int FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE c.document_id = ${id} AND NOT d.pending) AS visible,
      (SELECT count(*)::int FROM chunks WHERE document_id = ${id}) AS stored,
      (SELECT pending FROM documents WHERE id = ${id}) AS pending`.execute(t.deps.db);
  return row.rows[0]!;
}

describe('large new documents written in stages', () => {
  const t = useTestRuntime();

  it('are seen by readers whole or not at all, while their chunks are written in many transactions', async () => {
    const admin = t.admin();
    const total = 120;
    const ingestion = admin.documents.ingest({
      document: {
        id: 'staged',
        semantic_identifier: 'Staged',
        sections: [{ text: longText(total, 'quokka') }],
      },
    });
    let done = false;
    void ingestion.finally(() => {
      done = true;
    });
    let sawPartWritten = false;
    while (!done) {
      const found = await admin.search.adminSearch({ query: 'quokka', filters: {} });
      const listed = await admin.documents.listIngested({});
      // Read after them: a document pending now was pending when they ran.
      const counts = await chunkCounts(t, 'staged');
      if (counts.pending && counts.stored > 0) sawPartWritten = true;
      expect([0, counts.stored]).toContain(counts.visible);
      if (found.documents.length || listed.some((d) => d.document_id === 'staged'))
        expect(counts.pending).toBe(false);
    }
    expect(await ingestion).toEqual({ document_id: 'staged', already_existed: false });
    const counts = await chunkCounts(t, 'staged');
    expect(counts.pending).toBe(false);
    expect(counts.visible).toBe(counts.stored);
    expect(counts.stored).toBeGreaterThan(64);
    const found = await admin.search.adminSearch({ query: 'quokka', filters: {} });
    expect(found.documents.map((d) => d.document_id)).toEqual(['staged']);
    // Other readers wait for one short statement, not the whole document: they saw it half written.
    if (t.deps.dbKind === 'pglite') expect(sawPartWritten).toBe(true);
  }, 120_000);

  it('left pending by a crash, are invisible, replaced whole when posted again, and deleted at start-up', async () => {
    const admin = t.admin();
    const { db } = t.deps;
    const text = longText(80, 'wombat');
    const chunks = chunkDocument({ title: 'Crashed', sections: [{ text }] });
    const crashed = async (id: string) => {
      await documentsRepository.insertPendingDocument(db, {
        id,
        semantic_id: 'Crashed',
        title: 'Crashed',
        link: null,
        source: 'ingestion_api',
        from_ingestion_api: true,
        metadata: {},
        tags: [],
        primary_owners: [],
        secondary_owners: [],
        doc_updated_at: new Date(),
        content_hash: 'stale',
        chunk_count: chunks.length,
        is_public: true,
        access_user_ids: [],
        access_group_ids: [],
        access_external: [],
        external_public: false,
      });
      await documentsRepository.insertChunks(db, id, chunks.slice(0, 10));
    };
    await crashed('crashed-1');
    await crashed('crashed-2');
    expect((await admin.search.adminSearch({ query: 'wombat', filters: {} })).documents).toEqual([]);
    expect((await admin.documents.listIngested({})).map((d) => d.document_id)).not.toContain('crashed-1');
    expect((await errorOf(admin.documents.deleteIngested({ document_id: 'crashed-1' }))).error_code).toBe(
      'DOCUMENT_NOT_FOUND',
    );

    // Posted again before a restart: written whole and published.
    const posted = await admin.documents.ingest({
      document: { id: 'crashed-1', semantic_identifier: 'Crashed', sections: [{ text }] },
    });
    expect(posted).toEqual({ document_id: 'crashed-1', already_existed: false });
    const counts = await chunkCounts(t, 'crashed-1');
    expect(counts).toEqual({ visible: chunks.length, stored: chunks.length, pending: false });

    // Start-up deletes what is still pending, and nothing else.
    await discardPendingDocuments({ ctx: t.deps });
    expect(await chunkCounts(t, 'crashed-2')).toEqual({ visible: 0, stored: 0, pending: null });
    expect((await chunkCounts(t, 'crashed-1')).visible).toBe(chunks.length);
    const again = await admin.documents.ingest({
      document: { id: 'crashed-2', semantic_identifier: 'Crashed', sections: [{ text }] },
    });
    expect(again.already_existed).toBe(false);
  });
});
