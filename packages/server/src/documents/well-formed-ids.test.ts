import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';

const t = useTestRuntime();

const doc = (over: Record<string, unknown> = {}) => ({
  semantic_identifier: 'Surrogates',
  sections: [{ text: 'a document about lone surrogates' }],
  ...over,
});

describe('ids and keys with unpaired UTF-16 surrogates', () => {
  it('refuses two document ids that differ only by a lone surrogate (they would be stored as one)', async () => {
    const admin = t.caller(t.adminKey);
    for (const id of ['report-\ud800', 'report-\udc00', '\udfff']) {
      expect(await errorOf(admin.documents.ingest({ document: doc({ id }) }))).toMatchObject({
        status: 422,
        error_code: 'VALIDATION_ERROR',
        detail: expect.stringMatching(/^document\.id: must be well-formed Unicode/),
      });
    }
    // Nothing was stored under the replacement character either.
    const stored = (await admin.documents.listIngested({})).map((d) => d.document_id);
    expect(stored.filter((id) => id.startsWith('report-'))).toEqual([]);
    expect(await errorOf(admin.documents.deleteIngested({ document_id: 'report-\ud800' }))).toMatchObject({
      status: 422,
      detail: expect.stringMatching(/^document_id: /),
    });

    // A well-formed id with a surrogate pair (an emoji) is stored and echoed as given.
    const ok = await admin.documents.ingest({ document: doc({ id: 'report-\ud83d\ude00' }) });
    expect(ok.document_id).toBe('report-😀');
    expect((await admin.documents.listIngested({})).map((d) => d.document_id)).toContain('report-😀');
  });

  it('refuses ill-formed metadata keys and values (tags) and tag filters', async () => {
    const admin = t.caller(t.adminKey);
    const badKey = await errorOf(
      admin.documents.ingest({ document: doc({ id: 'meta-1', metadata: { 'team\ud800': 'x' } }) }),
    );
    expect(badKey).toMatchObject({ status: 422, detail: expect.stringMatching(/^document\.metadata/) });
    const badValue = await errorOf(
      admin.documents.ingest({ document: doc({ id: 'meta-2', metadata: { team: ['ok', 'x\udc00'] } }) }),
    );
    expect(badValue).toMatchObject({
      status: 422,
      detail: expect.stringMatching(/^document\.metadata\.team: /),
    });
    expect(
      await errorOf(
        admin.search.adminSearch({
          query: 'surrogates',
          filters: { tags: [{ tag_key: 'team', tag_value: 'x\udc00' }] },
        }),
      ),
    ).toMatchObject({
      status: 422,
      detail: expect.stringMatching(/^filters\.tags\.0\.tag_value: must be well-formed/),
    });
  });

  it('accepts free text with a lone surrogate (stored as U+FFFD)', async () => {
    const admin = t.caller(t.adminKey);
    const ok = await admin.documents.ingest({
      document: doc({ id: 'free-text', sections: [{ text: 'half an emoji \ud83d here' }] }),
    });
    expect(ok.document_id).toBe('free-text');
    const stored = await sql<{
      content: string;
    }>`SELECT content FROM chunks WHERE document_id = 'free-text'`.execute(t.deps.db);
    expect(stored.rows[0]?.content).toContain('half an emoji \ufffd here');
  });

  it('refuses ill-formed names that must be unique (document sets)', async () => {
    const admin = t.caller(t.adminKey);
    expect(await errorOf(admin.documentSets.create({ name: 'set \ud800' }))).toMatchObject({
      status: 422,
      detail: expect.stringMatching(/^name: must be well-formed Unicode/),
    });
  });
});
