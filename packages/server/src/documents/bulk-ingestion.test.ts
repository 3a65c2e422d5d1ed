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
