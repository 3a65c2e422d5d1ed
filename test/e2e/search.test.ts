import { documentsService } from '@kas/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

interface SearchDoc {
  document_id: string;
  semantic_identifier: string;
  link: string | null;
  source_type: string;
  score: number;
  blurb: string;
  match_highlights: string[];
}

describe.each(['pglite', 'postgres'] as const)('REST: admin search on %s', (db) => {
  let s: TestServer;
  let curatorA: { key: string; user_id: string };
  let curatorB: { key: string; user_id: string };

  const search = async (query: string, filters: Record<string, unknown> = {}, key = s.adminKey) => {
    const res = await s.request('POST', '/api/admin/search', { key, body: { query, filters } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { documents: SearchDoc[] }).documents;
  };
  const ids = async (...args: Parameters<typeof search>) => (await search(...args)).map((d) => d.document_id);

  beforeAll(async () => {
    s = await startTestServer({ db });
    curatorA = await s.createKey('curator');
    curatorB = await s.createKey('curator');
    const ingest = async (document: Record<string, unknown>, cc_pair_id?: number) => {
      const res = await s.request('POST', '/api/svc-api/ingestion', {
        key: s.adminKey,
        body: { document, cc_pair_id },
      });
      expect(res.status).toBe(200);
    };
    const deps = s.running.runtime.deps;
    const secret = await documentsService.createCcPair({
      ctx: deps,
      input: { name: 'private to A', access_type: 'private', creator_id: curatorA.user_id },
    });
    const sales = await documentsService.createCcPair({
      ctx: deps,
      input: { name: 'sales', access_type: 'public' },
    });
    await ingest({
      id: 'vpn',
      semantic_identifier: 'VPN setup',
      title: 'VPN setup guide',
      sections: [
        { text: 'Install the client first.', link: 'https://it/vpn#install' },
        { text: 'Then connect to the office gateway.', link: 'https://it/vpn#connect' },
      ],
      source: 'confluence',
      metadata: { team: 'it' },
      doc_updated_at: '2024-05-01T00:00:00Z',
    });
    await ingest({
      id: 'gateway-faq',
      semantic_identifier: 'FAQ',
      sections: [{ text: 'The payment gateway retries failed charges.' }],
      source: 'web',
      doc_updated_at: '2022-01-01T00:00:00Z',
    });
    await ingest(
      {
        id: 'pricing',
        semantic_identifier: 'Pricing sheet',
        sections: [{ text: 'Enterprise pricing includes a gateway add-on.' }],
        metadata: { team: 'sales' },
        doc_updated_at: '2024-02-01T00:00:00Z',
      },
      sales.cc_pair_id,
    );
    await ingest(
      {
        id: 'layoffs',
        semantic_identifier: 'Confidential reorg',
        sections: [{ text: 'The gateway team will be merged. Confidential.' }],
        doc_updated_at: '2024-06-01T00:00:00Z',
      },
      secret.cc_pair_id,
    );
    const set = await s.request('POST', '/api/manage/admin/document-set', {
      key: s.adminKey,
      body: { name: 'Sales', cc_pair_ids: [sales.cc_pair_id] },
    });
    expect(set.status).toBe(200);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('returns one result per document, best first, with the spec fields and highlights', async () => {
    const documents = await search('gateway');
    expect(documents.map((d) => d.document_id).sort()).toEqual(['gateway-faq', 'layoffs', 'pricing', 'vpn']);
    const scores = documents.map((d) => d.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const vpn = documents.find((d) => d.document_id === 'vpn')!;
    expect(vpn).toMatchObject({
      semantic_identifier: 'VPN setup',
      link: 'https://it/vpn#install',
      source_type: 'confluence',
      blurb: expect.stringContaining('Install the client first.'),
    });
    expect(vpn.match_highlights.join(' ')).toContain('<hi>gateway</hi>');
    expect((await search('VPN'))[0]!.document_id).toBe('vpn');
  });

  it('filters by source type, document set, time cutoff and tags', async () => {
    expect(await ids('gateway', { source_type: ['web'] })).toEqual(['gateway-faq']);
    expect(await ids('gateway', { document_set: ['Sales'] })).toEqual(['pricing']);
    expect((await ids('gateway', { time_cutoff: '2024-04-01T00:00:00Z' })).sort()).toEqual([
      'layoffs',
      'vpn',
    ]);
    expect(await ids('gateway', { tags: [{ tag_key: 'team', tag_value: 'it' }] })).toEqual(['vpn']);
    expect(
      await ids('gateway', { source_type: null, document_set: null, time_cutoff: null, tags: null }),
    ).toHaveLength(4);
  });

  it('never shows a private document to a caller without access', async () => {
    for (const query of ['gateway', 'confidential', 'reorg', '', 'confidentail', '"gateway team"']) {
      expect(await ids(query, {}, curatorB.key)).not.toContain('layoffs');
    }
    expect(await ids('confidential', {}, curatorA.key)).toEqual(['layoffs']);
    expect(await ids('confidential', {}, s.adminKey)).toEqual(['layoffs']);
  });

  it('is for admins and curators only', async () => {
    const basic = await s.createKey('basic');
    const forbidden = await s.request('POST', '/api/admin/search', {
      key: basic.key,
      body: { query: 'x', filters: {} },
    });
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toEqual({
      error_code: 'INSUFFICIENT_PERMISSIONS',
      detail: expect.any(String),
    });
    const anonymous = await s.request('POST', '/api/admin/search', { body: { query: 'x', filters: {} } });
    expect(anonymous.status).toBe(401);
    const noFilters = await s.request('POST', '/api/admin/search', { key: s.adminKey, body: { query: 'x' } });
    expect(noFilters.status).toBe(422);
    const badDate = await s.request('POST', '/api/admin/search', {
      key: s.adminKey,
      body: { query: 'x', filters: { time_cutoff: 'soon' } },
    });
    expect(badDate.status).toBe(422);
  });
});
