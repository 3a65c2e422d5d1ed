import { describe, expect, it } from 'vitest';
import { authenticate } from '../auth/authenticate.ts';
import * as searchService from '../search/search.service.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as documentsService from './documents.service.ts';

const t = useTestRuntime({ KAS_INGESTION_BATCH_MAX: '20', KAS_MAX_DOCUMENT_CHUNKS: '3' });

const doc = (id: string | undefined, text: string, over: Record<string, unknown> = {}) => ({
  ...(id === undefined ? {} : { id }),
  semantic_identifier: `Document ${id ?? text.slice(0, 20)}`,
  sections: [{ text, link: `https://wiki/${id ?? 'derived'}` }],
  ...over,
});

async function searchIds(query: string) {
  const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${t.adminKey}` });
  const found = await searchService.searchChunks({ ctx: t.deps, actor, query, limit: 100 });
  return new Set(found.map((c) => c.document_id));
}

describe('batch ingestion', () => {
  it('creates every document, answers each in order, and is idempotent by id', async () => {
    const documents = Array.from({ length: 15 }, (_, i) =>
      doc(`batch-${i}`, `Quokka migration notes number ${i}. The marsupial census continues.`),
    );
    const first = await t.admin().documents.ingestBatch({ documents });
    expect(first.results).toEqual(
      documents.map((d) => ({ document_id: d.id, already_existed: false, error: null })),
    );
    const found = await searchIds('quokka marsupial');
    for (const d of documents) expect(found.has(d.id!)).toBe(true);

    // The same batch again: nothing new; one document changed: replaced in place.
    const changed = documents.map((d, i) =>
      i === 3 ? doc(d.id, 'Rewritten entirely about wombat burrows.') : d,
    );
    const second = await t.admin().documents.ingestBatch({ documents: changed });
    expect(second.results).toEqual(
      documents.map((d) => ({ document_id: d.id, already_existed: true, error: null })),
    );
    const chunks = await t.deps.db
      .selectFrom('chunks')
      .select('content')
      .where('document_id', '=', 'batch-3')
      .execute();
    expect(chunks.map((c) => c.content)).toEqual(['Rewritten entirely about wombat burrows.']);
    expect((await searchIds('wombat burrows')).has('batch-3')).toBe(true);
    expect((await searchIds('quokka')).has('batch-3')).toBe(false);
  });

  it('derives omitted ids as the single route does, and writes a repeated id in the order sent', async () => {
    const single = await t.admin().documents.ingest({ document: doc(undefined, 'Derived id content.') });
    const batch = await t.admin().documents.ingestBatch({
      documents: [
        doc(undefined, 'Derived id content.'),
        doc('twice', 'First version about herons.'),
        doc('twice', 'Second version about egrets.'),
      ],
    });
    expect(batch.results).toEqual([
      { document_id: single.document_id, already_existed: true, error: null },
      { document_id: 'twice', already_existed: false, error: null },
      { document_id: 'twice', already_existed: true, error: null },
    ]);
    const chunks = await t.deps.db
      .selectFrom('chunks')
      .select('content')
      .where('document_id', '=', 'twice')
      .execute();
    expect(chunks.map((c) => c.content)).toEqual(['Second version about egrets.']);
  });

  it('refuses a document alone: the others of the batch are written', async () => {
    const tooLong = 'A sentence about the lighthouse keeper and his logbook entries. '.repeat(400);
    const result = await t.admin().documents.ingestBatch({
      documents: [
        doc('fine-1', 'Pelican feeding schedule.'),
        doc('too-many-chunks', tooLong),
        // The database refuses a NUL character: the group's transaction fails and each is written alone.
        doc('nul', 'Contains a \u0000 character.'),
        doc('fine-2', 'Pelican nesting season.'),
      ],
    });
    expect(result.results[0]).toEqual({ document_id: 'fine-1', already_existed: false, error: null });
    expect(result.results[1]).toMatchObject({
      document_id: 'too-many-chunks',
      already_existed: null,
      error: { error_code: 'PAYLOAD_TOO_LARGE' },
    });
    expect(result.results[2]).toMatchObject({
      document_id: 'nul',
      already_existed: null,
      error: { error_code: 'VALIDATION_ERROR' },
    });
    expect(result.results[3]).toEqual({ document_id: 'fine-2', already_existed: false, error: null });
    const stored = await t.deps.db
      .selectFrom('documents')
      .select('id')
      .where('id', 'in', ['fine-1', 'too-many-chunks', 'nul', 'fine-2'])
      .orderBy('id')
      .execute();
    expect(stored.map((r) => r.id)).toEqual(['fine-1', 'fine-2']);
  });

  it('answers a missing CC pair for each document, and refuses a batch over the limit (413)', async () => {
    const absent = await t.admin().documents.ingestBatch({
      cc_pair_id: 999_999,
      documents: [doc('p-1', 'x'), doc('p-2', 'y')],
    });
    expect(absent.results.map((r) => r.error?.error_code)).toEqual(['INVALID_INPUT', 'INVALID_INPUT']);
    const documents = Array.from({ length: 21 }, (_, i) => doc(`over-${i}`, 'Over the limit.'));
    expect(await errorOf(t.admin().documents.ingestBatch({ documents }))).toMatchObject({
      status: 413,
      error_code: 'PAYLOAD_TOO_LARGE',
    });
    expect(await errorOf(t.admin().documents.ingestBatch({ documents: [] }))).toMatchObject({
      status: 422,
    });
  });

  it('requires the curator role; a curator writes only into pairs they manage', async () => {
    const basic = await t.createKey('basic');
    expect(
      await errorOf(t.caller(basic.key).documents.ingestBatch({ documents: [doc('b', 'x')] })),
    ).toMatchObject({ status: 403 });
    const curator = await t.createKey('curator', 'batch curator');
    const group = await t.admin().userGroups.create({ name: 'batch-ops', user_ids: [curator.user_id] });
    await t
      .admin()
      .userGroups.setCurator({ user_group_id: group.id, user_id: curator.user_id, is_curator: true });
    const pair = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'batch ops pair', access_type: 'private', group_ids: [group.id] },
    });
    const asCurator = t.caller(curator.key).documents;
    const own = await asCurator.ingestBatch({
      cc_pair_id: pair.cc_pair_id,
      documents: [doc('curated-1', 'Ops runbook.'), doc('batch-0', 'Taking over an admin document.')],
    });
    expect(own.results[0]).toEqual({ document_id: 'curated-1', already_existed: false, error: null });
    // An admin's document is not the curator's to replace: refused alone, as by the single route.
    expect(own.results[1]).toMatchObject({
      document_id: 'batch-0',
      error: { error_code: 'DOCUMENT_NOT_FOUND' },
    });
    const unscoped = await asCurator.ingestBatch({ documents: [doc('c-2', 'No pair named.')] });
    expect(unscoped.results[0]?.error?.error_code).toBe('INSUFFICIENT_PERMISSIONS');
  });
});
