import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddings, startFakeEmbeddings } from '../../../../test/fakes/embeddings.ts';
import { type Actor, apiKeyActor } from '../auth/roles.ts';
import * as documentsService from '../documents/documents.service.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { reciprocalRankFusion } from './hybrid.ts';
import * as searchService from './search.service.ts';
import { searchIndexContract } from './search-index.contract.ts';

let embeddings: FakeEmbeddings;
beforeAll(async () => {
  embeddings = await startFakeEmbeddings();
});
afterAll(async () => {
  await embeddings?.close();
});

searchIndexContract('hybrid (Postgres full-text + vectors)', () => ({
  KAS_EMBEDDING_BASE_URL: embeddings.url,
  KAS_EMBEDDING_MODEL: 'fake-embed',
  KAS_EMBEDDING_API_KEY: 'embed-key',
}));

describe('hybrid retrieval', () => {
  const t = useTestRuntime(() => ({
    KAS_EMBEDDING_BASE_URL: embeddings.url,
    KAS_EMBEDDING_API_KEY: 'embed-key',
  }));
  let admin: Actor;
  beforeAll(async () => {
    const key = await t.createKey('admin');
    admin = apiKeyActor({ user_id: key.user_id, api_key_id: key.api_key_id, role: 'admin' });
  });

  it('embeds chunks with the configured endpoint and finds what keywords alone miss', async () => {
    await documentsService.ingestDocument({
      ctx: t.deps,
      input: {
        document: {
          id: 'ops',
          semantic_identifier: 'Operations',
          sections: [{ text: 'Restart the ingress controller when pods crash.' }],
        },
      },
    });
    const stored = await t.deps.db.selectFrom('chunk_embeddings').select('document_id').execute();
    expect(stored).toEqual([{ document_id: 'ops' }]);
    expect(embeddings.requests.at(-1)).toMatchObject({ authorization: 'Bearer embed-key' });
    // "urgently" is in no document, so the keyword query (all words required) finds nothing.
    const keywordOnly = await t.deps.db
      .selectFrom('chunks')
      .select('document_id')
      .where((eb) =>
        eb(
          eb.fn('to_tsvector', [eb.val('english'), eb.ref('content')]),
          '@@',
          eb.fn('plainto_tsquery', [eb.val('english'), eb.val('restart ingress urgently')]),
        ),
      )
      .execute();
    expect(keywordOnly).toEqual([]);
    const chunks = await searchService.searchChunks({
      ctx: t.deps,
      actor: admin,
      query: 'restart ingress urgently',
    });
    expect(chunks.map((c) => c.document_id)).toEqual(['ops']);
  });

  it('reports a failing embeddings endpoint on ingestion as 503, and a retry succeeds', async () => {
    embeddings.failNext(500);
    const input = {
      document: { id: 'retry', semantic_identifier: 'Retry', sections: [{ text: 'Hello there.' }] },
    };
    await expect(documentsService.ingestDocument({ ctx: t.deps, input })).rejects.toMatchObject({
      status: 503,
    });
    await expect(documentsService.ingestDocument({ ctx: t.deps, input })).resolves.toMatchObject({
      already_existed: true,
    });
    const rows = await t.deps.db
      .selectFrom('chunk_embeddings')
      .select('document_id')
      .where('document_id', '=', 'retry')
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('fuses ranked lists by reciprocal rank', () => {
    const hit = (id: string) => ({ document_id: id, chunk_id: 0, score: 0 });
    const fused = reciprocalRankFusion(
      [
        [hit('a'), hit('b')],
        [hit('b'), hit('c')],
      ],
      3,
    );
    expect(fused.map((h) => h.document_id)).toEqual(['b', 'a', 'c']);
    expect(fused[0]!.score).toBeCloseTo(1 / 62 + 1 / 61);
  });
});
