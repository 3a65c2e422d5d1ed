import { describe, expect, it } from 'vitest';
import { authenticate } from '../auth/authenticate.ts';
import { apiKeyActor } from '../auth/roles.ts';
import * as searchService from '../search/search.service.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { BLURB_TOKENS, CHUNK_TOKENS, chunkDocument } from './chunking.ts';
import * as documentsService from './documents.service.ts';

const t = useTestRuntime();

const doc = (over: Record<string, unknown> = {}) => ({
  semantic_identifier: 'Onboarding guide',
  sections: [
    { text: 'Welcome to the team. Read the handbook first.', link: 'https://wiki/onboarding#intro' },
  ],
  ...over,
});

describe('chunking', () => {
  it('keeps chunks within the token budget, sentence-aligned, with section links and blurbs', () => {
    const sentence = 'The quick brown fox jumps over the lazy dog near the river bank. ';
    const chunks = chunkDocument({
      title: 'Foxes',
      sections: [
        { text: 'Short intro.', link: 'https://a#intro' },
        { text: sentence.repeat(120), link: 'https://a#body' },
      ],
    });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.token_count).toBeLessThanOrEqual(CHUNK_TOKENS);
      expect(chunk.title).toBe('Foxes');
      expect(chunk.content.trim().endsWith('.')).toBe(true);
      expect(chunk.blurb.length).toBeGreaterThan(0);
      expect(chunk.blurb.length).toBeLessThan(chunk.content.length + 1);
    }
    expect(chunks[0]!.link).toBe('https://a#intro');
    expect(chunks[0]!.section_links).toEqual({ '0': 'https://a#intro', '13': 'https://a#body' });
    expect(chunks[1]!.link).toBe('https://a#body');
    expect(chunks.map((c) => c.chunk_id)).toEqual(chunks.map((_, i) => i));
    // The whole text survives chunking.
    expect(
      chunks
        .map((c) => c.content)
        .join('')
        .replace(/\s+/g, ''),
    ).toBe(`Short intro.${sentence.repeat(120)}`.replace(/\s+/g, ''));
  });

  it('splits a sentence longer than a chunk and caps the blurb', () => {
    const chunks = chunkDocument({ title: 't', sections: [{ text: 'word '.repeat(2000) }] });
    expect(chunks.length).toBeGreaterThanOrEqual(4);
    expect(chunks.every((c) => c.token_count <= CHUNK_TOKENS)).toBe(true);
    expect(chunks[0]!.blurb.split(/\s+/).length).toBeLessThanOrEqual(BLURB_TOKENS + 1);
  });
});

describe('ingestion', () => {
  it('creates, then updates in place, and skips unchanged content', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.documents.ingest({ document: doc({ id: 'doc-1' }) });
    expect(created).toEqual({ document_id: 'doc-1', already_existed: false });
    const again = await admin.documents.ingest({ document: doc({ id: 'doc-1' }) });
    expect(again).toEqual({ document_id: 'doc-1', already_existed: true });
    const updated = await admin.documents.ingest({
      document: doc({ id: 'doc-1', sections: [{ text: 'Completely new text about payroll.' }] }),
    });
    expect(updated.already_existed).toBe(true);
    const chunks = await t.deps.db
      .selectFrom('chunks')
      .selectAll()
      .where('document_id', '=', 'doc-1')
      .execute();
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.content).toBe('Completely new text about payroll.');
    const list = await admin.documents.listIngested({});
    expect(list.filter((d) => d.document_id === 'doc-1')).toEqual([
      { document_id: 'doc-1', semantic_id: 'Onboarding guide', link: null },
    ]);
  });

  it('derives the same id from the same content', async () => {
    const admin = t.caller(t.adminKey);
    const first = await admin.documents.ingest({ document: doc({ semantic_identifier: 'Derived' }) });
    const second = await admin.documents.ingest({ document: doc({ semantic_identifier: 'Derived' }) });
    expect(first.document_id).toMatch(/^ingestion_api_[0-9a-f]{32}$/);
    expect(second).toEqual({ document_id: first.document_id, already_existed: true });
    expect(first.already_existed).toBe(false);
  });

  it('finds ingested documents through the exported search service', async () => {
    const admin = t.caller(t.adminKey);
    await admin.documents.ingest({
      document: doc({
        id: 'kube',
        semantic_identifier: 'Kubernetes runbook',
        sections: [
          { text: 'Restart the ingress controller when pods crash.', link: 'https://wiki/kube#restart' },
        ],
      }),
    });
    const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${t.adminKey}` });
    const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query: 'ingress controller' });
    expect(chunks[0]).toMatchObject({
      document_id: 'kube',
      chunk_id: 0,
      semantic_identifier: 'Kubernetes runbook',
      link: 'https://wiki/kube#restart',
      source_type: 'file',
    });
    expect(chunks[0]!.match_highlights[0]).toContain('<hi>ingress</hi>');
  });

  it('keeps one document owned by two CC pairs, visible if either pair is public', async () => {
    const owner = await t.createKey('basic');
    const outsider = await t.createKey('basic');
    const privatePair = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'owner drive', access_type: 'private', creator_id: owner.user_id },
    });
    const publicPair = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'public mirror', access_type: 'public' },
    });
    const shared = doc({ id: 'shared', semantic_identifier: 'Quarterly zeppelin report' });
    await t.caller(t.adminKey).documents.ingest({ document: shared, cc_pair_id: privatePair.cc_pair_id });
    const search = (key: { user_id: string; api_key_id: number }) =>
      searchService.searchChunks({
        ctx: t.deps,
        actor: apiKeyActor({ ...key, role: 'basic' }),
        query: 'zeppelin',
      });
    expect((await search(owner)).map((c) => c.document_id)).toEqual(['shared']);
    expect(await search(outsider)).toEqual([]);

    const again = await t
      .caller(t.adminKey)
      .documents.ingest({ document: shared, cc_pair_id: publicPair.cc_pair_id });
    expect(again.already_existed).toBe(true);
    expect((await search(outsider)).map((c) => c.document_id)).toEqual(['shared']);
    const owners = await t.deps.db
      .selectFrom('document_by_cc_pair')
      .select('cc_pair_id')
      .where('document_id', '=', 'shared')
      .orderBy('cc_pair_id')
      .execute();
    expect(owners.map((o) => o.cc_pair_id)).toEqual([privatePair.cc_pair_id, publicPair.cc_pair_id]);
    const listed = await t
      .caller(t.adminKey)
      .documents.listCcPairDocuments({ cc_pair_id: publicPair.cc_pair_id });
    expect(listed.map((d) => d.document_id)).toEqual(['shared']);
  });

  it('answers concurrent requests (one group commit) each on its own: results, repeats and refusals', async () => {
    const admin = t.caller(t.adminKey);
    await admin.documents.ingest({ document: doc({ id: 'batch-old', semantic_identifier: 'Old' }) });
    const ingest = (id: string, over: Record<string, unknown> = {}, cc_pair_id?: number) =>
      documentsService
        .ingestDocument({ ctx: t.deps, input: { document: doc({ id, ...over }), cc_pair_id } })
        .then(
          (r) => r,
          (e: { error_code?: string }) => e.error_code,
        );
    const results = await Promise.all([
      ingest('batch-1', { semantic_identifier: 'First' }),
      ingest('batch-old', { semantic_identifier: 'Old, changed' }),
      ingest('batch-2', {}, 999_999),
      ingest('batch-dup', { semantic_identifier: 'Dup v1' }),
      ingest('batch-dup', { semantic_identifier: 'Dup v2' }),
      ingest('batch-3', { semantic_identifier: 'Third' }),
    ]);
    expect(results).toEqual([
      { document_id: 'batch-1', already_existed: false },
      { document_id: 'batch-old', already_existed: true },
      'INVALID_INPUT',
      { document_id: 'batch-dup', already_existed: false },
      { document_id: 'batch-dup', already_existed: true },
      { document_id: 'batch-3', already_existed: false },
    ]);
    const rows = await t.deps.db
      .selectFrom('documents')
      .select(['id', 'semantic_id'])
      .where('id', 'like', 'batch-%')
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { id: 'batch-1', semantic_id: 'First' },
      { id: 'batch-3', semantic_id: 'Third' },
      { id: 'batch-dup', semantic_id: 'Dup v2' },
      { id: 'batch-old', semantic_id: 'Old, changed' },
    ]);
    const chunkCount = await t.deps.db
      .selectFrom('chunks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('document_id', 'like', 'batch-%')
      .executeTakeFirstOrThrow();
    expect(Number(chunkCount.n)).toBe(4);
    const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${t.adminKey}` });
    const found = await searchService.searchChunks({ ctx: t.deps, actor, query: 'handbook', limit: 100 });
    expect(found.map((c) => c.document_id)).toEqual(
      expect.arrayContaining(['batch-1', 'batch-3', 'batch-dup']),
    );
  });

  it('requires a key (401) and the curator or admin role (403)', async () => {
    const basic = await t.createKey('basic');
    const curator = await t.createKey('curator');
    expect(await errorOf(t.caller().documents.listIngested({}))).toMatchObject({ status: 401 });
    for (const call of [
      () => t.caller(basic.key).documents.ingest({ document: doc() }),
      () => t.caller(basic.key).documents.listIngested({}),
      () => t.caller(basic.key).documents.deleteIngested({ document_id: 'doc-1' }),
      () => t.caller(basic.key).documents.listCcPairDocuments({ cc_pair_id: 1 }),
      () => t.caller(basic.key).search.adminSearch({ query: 'x', filters: {} }),
    ]) {
      expect(await errorOf(call())).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
    }
    // The ingestion API's own (public) pair is the admins'.
    expect(
      await errorOf(t.caller(curator.key).documents.ingest({ document: doc({ id: 'by-curator' }) })),
    ).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
  });

  it('keeps public pairs and admin-ingested documents out of reach of curators', async () => {
    const admin = t.caller(t.adminKey);
    const loner = t.caller((await t.createKey('curator', 'curates nothing')).key);
    const curator = await t.createKey('curator', 'curates ops');
    const ops = await admin.userGroups.create({ name: 'ops-docs', user_ids: [curator.user_id] });
    await admin.userGroups.setCurator({ user_group_id: ops.id, user_id: curator.user_id, is_curator: true });
    const opsPair = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'ops pair', access_type: 'private', group_ids: [ops.id] },
    });
    const publicPair = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'public pair', access_type: 'public' },
    });
    await admin.documents.ingest({ document: doc({ id: 'admin-default', semantic_identifier: 'v1' }) });
    await admin.documents.ingest({
      cc_pair_id: publicPair.cc_pair_id,
      document: doc({ id: 'admin-public', semantic_identifier: 'v1' }),
    });
    const absentDoc = await errorOf(admin.documents.deleteIngested({ document_id: 'no-such-doc' }));
    const absentPair = await errorOf(
      admin.documents.ingest({ cc_pair_id: 999_999, document: doc({ id: 'x' }) }),
    );
    for (const asCurator of [loner, t.caller(curator.key)]) {
      for (const id of ['admin-default', 'admin-public']) {
        expect(await errorOf(asCurator.documents.deleteIngested({ document_id: id }))).toEqual({
          ...absentDoc,
          detail: absentDoc.detail.replace('no-such-doc', id),
        });
        expect(await errorOf(asCurator.documents.ingest({ document: doc({ id }) }))).toMatchObject({
          status: 403,
        });
        expect(
          await errorOf(
            asCurator.documents.ingest({ cc_pair_id: publicPair.cc_pair_id, document: doc({ id }) }),
          ),
        ).toEqual({ ...absentPair, detail: absentPair.detail.replace('999999', `${publicPair.cc_pair_id}`) });
      }
      expect((await asCurator.documents.listIngested({})).map((d) => d.document_id)).not.toContain(
        'admin-public',
      );
    }
    // A curator's own pair cannot take over an admin's document either.
    expect(
      await errorOf(
        t
          .caller(curator.key)
          .documents.ingest({ cc_pair_id: opsPair.cc_pair_id, document: doc({ id: 'admin-public' }) }),
      ),
    ).toMatchObject({ status: 404, error_code: 'DOCUMENT_NOT_FOUND' });
    await expect(
      t
        .caller(curator.key)
        .documents.ingest({ cc_pair_id: opsPair.cc_pair_id, document: doc({ id: 'ops-own' }) }),
    ).resolves.toEqual({ document_id: 'ops-own', already_existed: false });
    const kept = await admin.documents.listIngested({});
    expect(kept.filter((d) => d.document_id.startsWith('admin-')).map((d) => d.semantic_id)).toEqual([
      'v1',
      'v1',
    ]);
  });

  it('limits curators to the CC pairs of groups they curate (list, pair documents, delete, re-ingest)', async () => {
    const admin = t.caller(t.adminKey);
    const curator = await t.createKey('curator', 'curates eng');
    const ownGroup = await admin.userGroups.create({ name: 'eng-docs', user_ids: [curator.user_id] });
    await admin.userGroups.setCurator({
      user_group_id: ownGroup.id,
      user_id: curator.user_id,
      is_curator: true,
    });
    const otherGroup = await admin.userGroups.create({ name: 'hr-docs', user_ids: [] });
    const own = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'eng pair', access_type: 'private', group_ids: [ownGroup.id] },
    });
    const other = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'hr pair', access_type: 'private', group_ids: [otherGroup.id] },
    });
    await admin.documents.ingest({ cc_pair_id: other.cc_pair_id, document: doc({ id: 'salaries' }) });
    await admin.documents.ingest({ cc_pair_id: own.cc_pair_id, document: doc({ id: 'runbook' }) });
    const asCurator = t.caller(curator.key);

    const listed = (await asCurator.documents.listIngested({})).map((d) => d.document_id);
    expect(listed).toContain('runbook');
    expect(listed).not.toContain('salaries');
    const absentPair = await errorOf(asCurator.documents.listCcPairDocuments({ cc_pair_id: 999_999 }));
    expect(await errorOf(asCurator.documents.listCcPairDocuments({ cc_pair_id: other.cc_pair_id }))).toEqual({
      ...absentPair,
      detail: absentPair.detail.replace('999999', `${other.cc_pair_id}`),
    });
    expect(await asCurator.documents.listCcPairDocuments({ cc_pair_id: own.cc_pair_id })).toHaveLength(1);
    expect(await errorOf(asCurator.documents.deleteIngested({ document_id: 'salaries' }))).toMatchObject({
      status: 404,
    });
    // Re-ingesting the private document's id into their own pair would hand it to their group.
    expect(
      await errorOf(
        asCurator.documents.ingest({ cc_pair_id: own.cc_pair_id, document: doc({ id: 'salaries' }) }),
      ),
    ).toMatchObject({ status: 404 });
    expect(
      await errorOf(
        asCurator.documents.ingest({ cc_pair_id: other.cc_pair_id, document: doc({ id: 'new' }) }),
      ),
    ).toMatchObject({ status: 400, detail: `CC pair ${other.cc_pair_id} does not exist` });
    expect((await admin.documents.listIngested({})).map((d) => d.document_id)).toContain('salaries');
    await asCurator.documents.deleteIngested({ document_id: 'runbook' });
  });

  it('rejects an invalid document (422)', async () => {
    const admin = t.caller(t.adminKey);
    for (const document of [
      { semantic_identifier: 'x', sections: [] },
      { sections: [{ text: 'x' }] },
      { semantic_identifier: 'x', sections: [{ text: 'x' }], metadata: { k: { nested: true } } },
      { semantic_identifier: 'x', sections: [{ text: 'x' }], doc_updated_at: 'not a date' },
    ]) {
      expect(await errorOf(admin.documents.ingest({ document } as never))).toMatchObject({
        status: 422,
        error_code: 'VALIDATION_ERROR',
      });
    }
  });

  it('deletes ingested documents (204) and answers 404 / 400 as the spec says', async () => {
    const admin = t.caller(t.adminKey);
    await admin.documents.ingest({ document: doc({ id: 'to-delete' }) });
    await admin.documents.deleteIngested({ document_id: 'to-delete' });
    expect(await errorOf(admin.documents.deleteIngested({ document_id: 'to-delete' }))).toMatchObject({
      status: 404,
      error_code: 'DOCUMENT_NOT_FOUND',
    });
    expect(await errorOf(admin.documents.ingest({ document: doc(), cc_pair_id: 999_999 }))).toMatchObject({
      status: 400,
      error_code: 'INVALID_INPUT',
    });
    await admin.documents.ingest({ document: doc({ id: 'synced' }) });
    await t.deps.db
      .updateTable('documents')
      .set({ from_ingestion_api: false })
      .where('id', '=', 'synced')
      .execute();
    expect(await errorOf(admin.documents.deleteIngested({ document_id: 'synced' }))).toMatchObject({
      status: 400,
      detail: 'Document was not created via the ingestion API',
    });
  });
});
