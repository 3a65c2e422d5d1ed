import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { testDbKind } from '../testing/test-runtime.ts';
import { buildChampions, reweightChunks } from './search.repository.ts';

// Only a Postgres server runs transactions side by side (PGlite runs one at a time).
describe.runIf(testDbKind() === 'postgres')('search maintenance and writers', () => {
  const t = useTestRuntime();

  it("re-weighting skips the chunks a writer is replacing instead of waiting for it (a deadlock's half)", async () => {
    const admin = t.caller(t.adminKey);
    for (const id of ['a', 'b'])
      await admin.documents.ingest({
        document: {
          id,
          semantic_identifier: id,
          sections: [{ text: `${id} words about locks. `.repeat(50) }],
        },
      });
    const events: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writer = t.deps.db.transaction().execute(async (trx) => {
      await sql`DELETE FROM chunks WHERE document_id = 'a'`.execute(trx);
      await held;
      events.push('writer committed');
    });
    // The writer holds document a's chunks; re-weighting every chunk goes on past them.
    await new Promise((resolve) => setTimeout(resolve, 100));
    let after: Awaited<ReturnType<typeof reweightChunks>> = null;
    do after = await reweightChunks(t.deps.db, after, 1000);
    while (after);
    events.push('re-weighted');
    release();
    await writer;
    expect(events).toEqual(['re-weighted', 'writer committed']);
  });

  it('a search building a missing list does not wait for another build that holds it', async () => {
    await sql`INSERT INTO search_terms (term, df) VALUES ('lock', 2) ON CONFLICT (term) DO NOTHING`.execute(
      t.deps.db,
    );
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const pass = t.deps.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM search_terms WHERE term = 'lock' FOR UPDATE`.execute(trx);
      await held;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await buildChampions(t.deps.db, 'lock', 2, 10, { ifFree: true })).toBeUndefined();
    release();
    await pass;
    expect(await buildChampions(t.deps.db, 'lock', 2, 10, { ifFree: true })).toBe(0);
  });
});
