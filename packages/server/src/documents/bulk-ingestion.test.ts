import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as documentsService from './documents.service.ts';

const t = useTestRuntime({ KAS_INGEST_WRITERS: '1', KAS_BULK_INGEST_WRITERS: '2' });

const documents = (label: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    document: {
      id: `${label}-${i}`,
      semantic_identifier: `Bulk ${label} ${i}`,
      sections: [{ text: `Heron ${i} waded through the ${label} marsh.`, link: null }],
    },
  }));

/** Ingests the documents at once; the most ingestion transactions seen in flight meanwhile. */
async function mostWriters(label: string, during?: () => Promise<unknown>): Promise<number> {
  let most = 0;
  const watch = setInterval(() => {
    most = Math.max(most, t.deps.ingestion.inFlight);
  }, 1);
  let done = false;
  const requests = (async () => {
    while (during && !done) {
      await during();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    const settled = await documentsService.ingestMany({ ctx: t.deps, documents: documents(label, 800) });
    expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
  } finally {
    done = true;
    clearInterval(watch);
    await requests;
  }
  return most;
}

describe('a bulk load', () => {
  it('is written by KAS_BULK_INGEST_WRITERS transactions on Postgres while no request runs a statement', async () => {
    // Quiet: the runtime's start-up statements (requests' kind) are over.
    await new Promise((resolve) => setTimeout(resolve, 2200));
    expect(await mostWriters('quiet')).toBe(t.deps.dbKind === 'postgres' ? 2 : 1);
    expect(t.deps.dbGate?.extraTurns ?? 0).toBe(0);
  });

  it("keeps to KAS_INGEST_WRITERS while requests' statements run", async () => {
    expect(await mostWriters('busy', () => sql`SELECT 1`.execute(t.deps.db))).toBe(1);
  });
});

describe('a group of documents of several chunks', () => {
  it('holds as many documents of two chunks as a group of small documents may', async () => {
    // ~800 tokens: two chunks each. On the embedded database a group used to end as soon as its chunks
    // passed 64 (the size from which one document is written alone, in stages): at 33 such documents.
    const text = (i: number) =>
      Array.from({ length: 80 }, (_, j) => `Heron ${i} waded through marsh ${j}.`).join(' ');
    const settled = await documentsService.ingestMany({
      ctx: t.deps,
      documents: Array.from({ length: 60 }, (_, i) => ({
        document: {
          id: `pairs-${i}`,
          semantic_identifier: `Pairs ${i}`,
          sections: [{ text: text(i), link: null }],
        },
      })),
    });
    expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
    const chunks = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM chunks WHERE document_id LIKE 'pairs-%'`.execute(t.deps.db);
    expect(chunks.rows[0]!.n).toBe(120);
    // Documents written by one transaction share their row version's transaction id.
    const groups = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM documents WHERE id LIKE 'pairs-%' GROUP BY xmin::text ORDER BY n DESC`.execute(
      t.deps.db,
    );
    expect(groups.rows[0]!.n).toBeGreaterThan(33);
  });
});
