import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddings, startFakeEmbeddings } from '../../../../test/fakes/embeddings.ts';
import { type Actor, apiKeyActor } from '../auth/roles.ts';
import * as documentsService from '../documents/documents.service.ts';
import { createLogger } from '../logger.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { embeddingBackfillTask } from './backfill-task.ts';
import { createSearchIndex } from './create-search-index.ts';
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

  it('searches with keywords only while the embeddings endpoint is down, warning once a minute at most', async () => {
    const down = await startFakeEmbeddings();
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger(
      { KAS_LOG_LEVEL: 'info', KAS_LOG_FORMAT: 'json' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    const index = createSearchIndex(
      { ...t.deps.config, KAS_EMBEDDING_BASE_URL: down.url },
      { db: t.deps.db, read: t.deps.db },
      logger,
    );
    await documentsService.ingestDocument({
      ctx: t.deps,
      input: {
        document: {
          id: 'fallback',
          semantic_identifier: 'Fallback',
          sections: [{ text: 'The lighthouse keeper trims the wick at dusk.' }],
        },
      },
    });
    const request = { query: 'lighthouse wick', filters: {}, access: { all: true as const }, limit: 5 };
    expect((await index.search(request)).map((h) => h.document_id)).toContain('fallback');
    await down.close();
    // The endpoint is gone mid-test: searches still answer, from keywords.
    for (let i = 0; i < 3; i++)
      expect((await index.search(request)).map((h) => h.document_id)).toEqual(['fallback']);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      endpoint: `${down.url}/embeddings`,
      msg: expect.stringContaining('keywords only'),
    });
    expect(String(warnings[0]!.cause)).toMatch(/fetch failed|ECONNREFUSED/);
  });

  it('answers search and chat while the configured embeddings endpoint is down', async () => {
    await documentsService.ingestDocument({
      ctx: t.deps,
      input: {
        document: {
          id: 'beacon',
          semantic_identifier: 'Beacon',
          sections: [{ text: 'The harbour beacon flashes green every four seconds.' }],
        },
      },
    });
    await embeddings.close();
    try {
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor: admin, query: 'harbour beacon' });
      expect(chunks.map((c) => c.document_id)).toEqual(['beacon']);
      const answer = await t.caller(t.adminKey).chat.sendMessage({
        message: 'How often does the harbour beacon flash?',
        chat_session_info: { persona_id: 0, description: 'fallback' },
        stream: false,
      });
      expect(answer).toMatchObject({ error_msg: null });
      expect(answer).toMatchObject({ answer: expect.stringContaining('every four seconds') });
    } finally {
      embeddings = await startFakeEmbeddings();
    }
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

describe('embeddings back-filled for documents indexed before they were configured', () => {
  const t = useTestRuntime();

  it('embeds the chunks without vectors in the background, with progress in the log, then stops looking', async () => {
    for (const [id, text] of [
      ['before-1', 'Restart the ingress controller when pods crash.'],
      ['before-2', 'Rotate the database password every quarter.'],
    ] as const) {
      await documentsService.ingestDocument({
        ctx: t.deps,
        input: { document: { id, semantic_identifier: id, sections: [{ text }] } },
      });
    }
    expect(await t.deps.db.selectFrom('chunk_embeddings').select('document_id').execute()).toEqual([]);
    // The operator sets KAS_EMBEDDING_BASE_URL and restarts: the same database, now with vectors.
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger(
      { KAS_LOG_LEVEL: 'info', KAS_LOG_FORMAT: 'json' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    const search = createSearchIndex(
      { ...t.deps.config, KAS_EMBEDDING_BASE_URL: embeddings.url },
      { db: t.deps.db, read: t.deps.db },
      logger,
    );
    const deps = { ...t.deps, search, logger };
    await embeddingBackfillTask.run(deps, new AbortController().signal);
    const stored = await t.deps.db
      .selectFrom('chunk_embeddings')
      .select('document_id')
      .orderBy('document_id')
      .execute();
    expect(stored.map((r) => r.document_id)).toEqual(['before-1', 'before-2']);
    expect(lines.filter((l) => l.embedded !== undefined)).toEqual([
      expect.objectContaining({ level: 30, embedded: 2, remaining: 0 }),
    ]);
    // Vectors now find what the keywords alone miss.
    const hits = await search.search({
      query: 'restart ingress urgently',
      filters: {},
      access: { all: true },
      limit: 5,
    });
    expect(hits.map((h) => h.document_id)).toContain('before-1');
    // Nothing left: the next runs do not even query.
    const requests = embeddings.requests.length;
    await embeddingBackfillTask.run(deps, new AbortController().signal);
    expect(await search.backfillEmbeddings!(10)).toBeNull();
    expect(embeddings.requests.length).toBe(requests);
  });
});
