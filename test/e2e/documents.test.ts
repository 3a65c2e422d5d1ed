import { createKasClient } from '@kas/sdk';
import { documentsService } from '@kas/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

describe.each(['pglite', 'postgres'] as const)('REST: document ingestion and document sets on %s', (db) => {
  let s: TestServer;
  let curator: { key: string; user_id: string };
  let basic: { key: string; user_id: string };
  beforeAll(async () => {
    s = await startTestServer({ db });
    curator = await s.createKey('curator');
    basic = await s.createKey('basic');
  });
  afterAll(async () => {
    await s?.close();
  });

  const ingest = (body: unknown, key = s.adminKey) =>
    s.request('POST', '/api/svc-api/ingestion', { key, body });

  it('ingests, updates in place, lists and deletes through the spec paths', async () => {
    const document = {
      id: 'handbook',
      semantic_identifier: 'Employee handbook',
      sections: [{ text: 'Vacation requests go to your manager.', link: 'https://hr/handbook#vacation' }],
      source: 'web',
      metadata: { department: 'hr', audience: ['all', 'new hires'] },
      doc_updated_at: '2024-03-01T12:00:00Z',
      primary_owners: [{ display_name: 'HR', email: 'hr@example.com' }],
    };
    const created = await ingest({ document });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ document_id: 'handbook', already_existed: false });

    const updated = await ingest({
      document: { ...document, sections: [{ text: 'Vacation requests go to the HR portal.' }] },
    });
    expect(await updated.json()).toEqual({ document_id: 'handbook', already_existed: true });

    const derived = await ingest({
      document: { semantic_identifier: 'No id', sections: [{ text: 'Body.' }] },
    });
    // The ingestion API's own pair is the admins': a curator names a pair of groups they curate.
    const byCurator = await ingest(
      { document: { semantic_identifier: 'No id', sections: [{ text: 'Body.' }] } },
      curator.key,
    );
    expect(byCurator.status).toBe(403);
    const derivedBody = await derived.json();
    expect(derivedBody.document_id).toMatch(/^ingestion_api_/);

    const list = await s.request('GET', '/api/svc-api/ingestion', { key: s.adminKey });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual([
      // The update replaced the sections, and with them the link.
      { document_id: 'handbook', semantic_id: 'Employee handbook', link: null },
      { document_id: derivedBody.document_id, semantic_id: 'No id', link: null },
    ]);

    const search = await s.request('POST', '/api/admin/search', {
      key: s.adminKey,
      body: { query: 'HR portal', filters: {} },
    });
    expect((await search.json()).documents.map((d: { document_id: string }) => d.document_id)).toEqual([
      'handbook',
    ]);

    const deleted = await s.request('DELETE', '/api/svc-api/ingestion/handbook', { key: s.adminKey });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    const again = await s.request('DELETE', '/api/svc-api/ingestion/handbook', { key: s.adminKey });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ error_code: 'DOCUMENT_NOT_FOUND', detail: expect.any(String) });
    const gone = await s.request('POST', '/api/admin/search', {
      key: s.adminKey,
      body: { query: 'HR portal', filters: {} },
    });
    expect((await gone.json()).documents).toEqual([]);
  });

  it('ingests a batch over REST and through the SDK, each document answered on its own', async () => {
    const documents = Array.from({ length: 30 }, (_, i) => ({
      id: `batch-e2e-${i}`,
      semantic_identifier: `Batch ${i}`,
      sections: [{ text: `Narwhal tusk survey, entry ${i}.` }],
    }));
    const res = await s.request('POST', '/api/svc-api/ingestion/batch', {
      key: s.adminKey,
      body: { documents: [...documents, { ...documents[0], sections: [{ text: 'bad \u0000' }] }] },
    });
    expect(res.status).toBe(200);
    const { results } = await res.json();
    expect(results.slice(0, 30)).toEqual(
      documents.map((d) => ({ document_id: d.id, already_existed: false, error: null })),
    );
    expect(results[30]).toMatchObject({
      document_id: 'batch-e2e-0',
      already_existed: null,
      error: { error_code: 'VALIDATION_ERROR' },
    });
    const kas = createKasClient({ baseUrl: s.url, apiKey: s.adminKey });
    const again = await kas.documents.ingestBatch(documents.slice(0, 2));
    expect(again).toEqual([
      { document_id: 'batch-e2e-0', already_existed: true, error: null },
      { document_id: 'batch-e2e-1', already_existed: true, error: null },
    ]);
    const found = await kas.documents.search('narwhal tusk');
    expect(found.documents.length).toBeGreaterThan(0);
    const refused = await s.request('POST', '/api/svc-api/ingestion/batch', {
      key: basic.key,
      body: { documents },
    });
    expect(refused.status).toBe(403);
  });

  it('lists the documents of a CC pair, and 404s an unknown pair', async () => {
    const deps = s.running.runtime.deps;
    const pair = await documentsService.createCcPair({
      ctx: deps,
      input: { name: 'docs pair', access_type: 'public' },
    });
    await ingest({
      document: { id: 'in-pair', semantic_identifier: 'In pair', sections: [{ text: 'x' }] },
      cc_pair_id: pair.cc_pair_id,
    });
    const res = await s.request('GET', `/api/svc-api/connector-docs/${pair.cc_pair_id}`, {
      key: s.adminKey,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([{ document_id: 'in-pair', semantic_id: 'In pair', link: null }]);
    const missing = await s.request('GET', '/api/svc-api/connector-docs/999999', { key: s.adminKey });
    expect(missing.status).toBe(404);
    // A public pair without groups is the admins' to manage: a curator gets the absent pair's answer.
    const asCurator = await s.request('GET', `/api/svc-api/connector-docs/${pair.cc_pair_id}`, {
      key: curator.key,
    });
    expect(asCurator.status).toBe(404);
  });

  it('answers each error with the spec status and {error_code, detail}', async () => {
    const valid = { document: { semantic_identifier: 'x', sections: [{ text: 'y' }] } };
    const cases: [Response, number, string][] = [
      [await ingest(valid, ''), 401, 'UNAUTHENTICATED'],
      [await ingest(valid, basic.key), 403, 'INSUFFICIENT_PERMISSIONS'],
      [await s.request('GET', '/api/svc-api/ingestion', { key: basic.key }), 403, 'INSUFFICIENT_PERMISSIONS'],
      [
        await s.request('DELETE', '/api/svc-api/ingestion/x', { key: basic.key }),
        403,
        'INSUFFICIENT_PERMISSIONS',
      ],
      [
        await s.request('GET', '/api/svc-api/connector-docs/1', { key: basic.key }),
        403,
        'INSUFFICIENT_PERMISSIONS',
      ],
      [await ingest({ ...valid, cc_pair_id: 424242 }), 400, 'INVALID_INPUT'],
      [await ingest({ document: { semantic_identifier: 'x', sections: [] } }), 422, 'VALIDATION_ERROR'],
      [await ingest({ document: { sections: [{ text: 'y' }] } }), 422, 'VALIDATION_ERROR'],
      [
        await ingest({ document: { ...valid.document, doc_updated_at: 'yesterday' } }),
        422,
        'VALIDATION_ERROR',
      ],
      [
        await s.request('POST', '/api/svc-api/ingestion', { key: s.adminKey, rawBody: '{"document":' }),
        422,
        'VALIDATION_ERROR',
      ],
      [
        await s.request('DELETE', '/api/svc-api/ingestion/nope', { key: s.adminKey }),
        404,
        'DOCUMENT_NOT_FOUND',
      ],
    ];
    for (const [res, status, code] of cases) {
      expect({ status: res.status, body: await res.json() }).toEqual({
        status,
        body: { error_code: code, detail: expect.any(String) },
      });
    }
  });

  it('refuses to delete a connector-synced document (400)', async () => {
    await ingest({ document: { id: 'synced', semantic_identifier: 'Synced', sections: [{ text: 'z' }] } });
    await s.running.runtime.deps.db
      .updateTable('documents')
      .set({ from_ingestion_api: false })
      .where('id', '=', 'synced')
      .execute();
    const res = await s.request('DELETE', '/api/svc-api/ingestion/synced', { key: s.adminKey });
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toBe('Document was not created via the ingestion API');
  });

  it('manages document sets (admin/curator) and lists those the caller may see', async () => {
    const pair = await documentsService.createCcPair({
      ctx: s.running.runtime.deps,
      input: { name: 'set pair', access_type: 'public' },
    });
    const created = await s.request('POST', '/api/manage/admin/document-set', {
      key: curator.key,
      body: {
        name: 'Engineering',
        description: 'Eng docs',
        cc_pair_ids: [pair.cc_pair_id],
        is_public: false,
      },
    });
    expect(created.status).toBe(200);
    const set = await created.json();
    expect(set).toEqual({
      id: expect.any(Number),
      name: 'Engineering',
      description: 'Eng docs',
      cc_pair_ids: [pair.cc_pair_id],
      is_public: false,
      users: [],
      groups: [],
    });
    const names = async (key: string) =>
      (
        (await (await s.request('GET', '/api/manage/document-set', { key })).json()) as { name: string }[]
      ).map((d) => d.name);
    expect(await names(curator.key)).toContain('Engineering');
    expect(await names(basic.key)).not.toContain('Engineering');

    const shared = await s.request('PATCH', '/api/manage/admin/document-set', {
      key: curator.key,
      body: { id: set.id, users: [basic.user_id], description: 'Shared' },
    });
    expect(await shared.json()).toMatchObject({
      description: 'Shared',
      users: [basic.user_id],
      is_public: false,
    });
    expect(await names(basic.key)).toContain('Engineering');

    const duplicate = await s.request('POST', '/api/manage/admin/document-set', {
      key: s.adminKey,
      body: { name: 'Engineering' },
    });
    expect(duplicate.status).toBe(409);
    const badPair = await s.request('POST', '/api/manage/admin/document-set', {
      key: s.adminKey,
      body: { name: 'Bad', cc_pair_ids: [987654] },
    });
    expect(badPair.status).toBe(400);
    const byBasic = await s.request('POST', '/api/manage/admin/document-set', {
      key: basic.key,
      body: { name: 'Z' },
    });
    expect(byBasic.status).toBe(403);
    const otherCurator = await s.createKey('curator');
    const notOwner = await s.request('DELETE', `/api/manage/admin/document-set/${set.id}`, {
      key: otherCurator.key,
    });
    expect(notOwner.status).toBe(403);

    const deleted = await s.request('DELETE', `/api/manage/admin/document-set/${set.id}`, {
      key: curator.key,
    });
    expect(deleted.status).toBe(204);
    const missing = await s.request('DELETE', `/api/manage/admin/document-set/${set.id}`, {
      key: s.adminKey,
    });
    expect(missing.status).toBe(404);
    expect((await missing.json()).error_code).toBe('DOCUMENT_SET_NOT_FOUND');
    expect((await s.request('GET', '/api/manage/document-set', {})).status).toBe(401);
  });
});
