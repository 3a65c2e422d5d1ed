import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMeilisearch, startFakeMeilisearch } from '../../../../test/fakes/meilisearch.ts';
import { createMeilisearchIndex, MEILI_SETTINGS, meiliFilter } from './meilisearch.ts';
import { searchIndexContract } from './search-index.contract.ts';

// Against a real Meilisearch when MEILI_URL is set, else against the local fake speaking its API.
let fake: FakeMeilisearch | undefined;
const realUrl = process.env.MEILI_URL;

beforeAll(async () => {
  if (!realUrl) fake = await startFakeMeilisearch();
});
afterAll(async () => {
  await fake?.close();
});

searchIndexContract(realUrl ? 'Meilisearch' : 'Meilisearch (local fake server)', () => ({
  MEILI_URL: realUrl ?? fake!.url,
  ...(realUrl
    ? process.env.MEILI_API_KEY
      ? { MEILI_API_KEY: process.env.MEILI_API_KEY }
      : {}
    : { MEILI_API_KEY: fake!.apiKey }),
  MEILI_INDEX: `kas_test_${randomBytes(6).toString('hex')}`,
}));

const document = {
  document_id: 'd"1',
  semantic_identifier: 'Doc',
  source_type: 'file',
  updated_at: new Date('2024-01-01T00:00:00Z'),
  tags: [],
  document_sets: ['Set "A"'],
  hidden: false,
  is_public: true,
  access_user_ids: [],
  access_group_ids: [],
  chunks: [
    { chunk_id: 0, title: 'Doc', content: 'alpha beta', blurb: 'alpha beta', link: null },
    { chunk_id: 1, title: 'Doc', content: 'gamma delta', blurb: 'gamma delta', link: null },
  ],
};

describe.skipIf(!!realUrl)('Meilisearch adapter against the fake server', () => {
  it('configures filterable attributes before writing and escapes filter values', async () => {
    const index = createMeilisearchIndex({ host: fake!.url, apiKey: fake!.apiKey, indexUid: 'adapter_a' });
    await index.indexDocuments([document]);
    const settings = fake!.requests.find((r) => r.path === '/indexes/adapter_a/settings');
    expect(settings?.body).toEqual(MEILI_SETTINGS);
    const stored = fake!.documents('adapter_a');
    expect(stored).toHaveLength(2);
    expect(stored[0]).toMatchObject({
      document_id: 'd"1',
      chunk_id: 0,
      updated_at: 1704067200,
      is_public: true,
    });
    expect(String(stored[0]!.id)).toMatch(/^c_[0-9a-f]{40}_0$/);

    // A shorter new version removes the chunks it no longer has.
    await index.indexDocuments([{ ...document, chunks: [document.chunks[0]!] }]);
    expect(fake!.documents('adapter_a')).toHaveLength(1);

    const hits = await index.search({
      query: 'alpha',
      filters: { document_sets: ['Set "A"'] },
      access: { all: false, user_id: 'u', group_ids: [3], external: [] },
      limit: 5,
    });
    expect(hits).toEqual([{ document_id: 'd"1', chunk_id: 0, score: expect.any(Number) }]);
    const search = fake!.requests.filter((r) => r.path === '/indexes/adapter_a/search').at(-1);
    expect(search?.body).toMatchObject({
      q: 'alpha',
      filter:
        '(is_public = true OR access_user_ids = "u" OR access_group_ids IN [3]) AND hidden = false AND document_sets IN ["Set \\"A\\""]',
      showRankingScore: true,
      limit: 5,
    });

    await index.deleteDocuments(['d"1']);
    expect(fake!.documents('adapter_a')).toHaveLength(0);
  });

  it('fails the write when the Meilisearch task fails', async () => {
    const index = createMeilisearchIndex({ host: fake!.url, apiKey: fake!.apiKey, indexUid: 'adapter_b' });
    await index.indexDocuments([document]);
    fake!.failNextTask({ code: 'invalid_document_fields', message: 'simulated' });
    await expect(index.indexDocuments([document])).rejects.toThrow(/failed: simulated/);
  });

  it('reports an unreachable or unauthorised engine as 503 on search', async () => {
    const wrongKey = createMeilisearchIndex({ host: fake!.url, apiKey: 'nope', indexUid: 'adapter_c' });
    await expect(
      wrongKey.search({ query: 'x', filters: {}, access: { all: true }, limit: 1 }),
    ).rejects.toMatchObject({ status: 503, error_code: 'SERVICE_UNAVAILABLE' });
    await expect(wrongKey.indexDocuments([document])).rejects.toThrow();
  });

  it('builds filters for every attribute', () => {
    expect(
      meiliFilter(
        {
          source_types: ['web'],
          time_cutoff: new Date('2024-01-01T00:00:00Z'),
          tags: ['team\u001ffinance'],
          document_ids: ['a'],
          include_hidden: true,
        },
        { all: true },
      ),
    ).toBe(
      'source_type IN ["web"] AND updated_at >= 1704067200 AND tags IN ["team\u001ffinance"] AND document_id IN ["a"]',
    );
  });

  it('lets external principals of a sync source see a document, beside users and groups', () => {
    expect(
      meiliFilter(
        {},
        { all: false, user_id: 'u', group_ids: [3], external: ['email:a@b.example', 'group:slack:eng'] },
      ),
    ).toBe(
      '(is_public = true OR access_user_ids = "u" OR access_group_ids IN [3] OR access_external IN ["email:a@b.example", "group:slack:eng"]) AND hidden = false',
    );
    expect(MEILI_SETTINGS.filterableAttributes).toContain('access_external');
  });
});
