import type { Db } from '../db/database.ts';
import { causeChain, type Logger } from '../logger.ts';
import type { Embedder } from './embeddings.ts';
import { parseQuery } from './query-parser.ts';
import * as searchRepository from './search.repository.ts';
import type { SearchHit, SearchIndex } from './search-index.ts';
import { chunkKey } from './search-index.ts';

/** The reciprocal rank fusion constant (the usual 60). */
const RRF_K = 60;

/** Fuses ranked lists: each hit scores the sum of 1 / (k + rank) over the lists it appears in. */
export function reciprocalRankFusion(lists: SearchHit[][], limit: number, k = RRF_K): SearchHit[] {
  const fused = new Map<string, SearchHit>();
  for (const list of lists) {
    list.forEach((hit, rank) => {
      const key = chunkKey(hit);
      const current = fused.get(key);
      const add = 1 / (k + rank + 1);
      if (current) current.score += add;
      else fused.set(key, { document_id: hit.document_id, chunk_id: hit.chunk_id, score: add });
    });
  }
  return [...fused.values()]
    .sort(
      (a, b) => b.score - a.score || a.document_id.localeCompare(b.document_id) || a.chunk_id - b.chunk_id,
    )
    .slice(0, limit);
}

/** While the embeddings endpoint fails, its warning is logged at most once in this interval. */
const FALLBACK_WARNING_INTERVAL_MS = 60_000;

/**
 * Keyword search (Postgres or Meilisearch) fused with vector search over chunk embeddings stored in
 * Postgres (pgvector where available). Embeddings are computed after commit, outside any transaction.
 * When the embeddings endpoint cannot embed a query, the search is keywords only: a warning names the
 * endpoint and the cause, once a minute at most while it lasts (with the number of searches since).
 */
export function createHybridIndex(options: {
  keyword: SearchIndex;
  db: Db;
  embedder: Embedder;
  /** Vector hits below this cosine similarity are noise, not matches. */
  minSimilarity?: number;
  logger?: Logger;
  /** The embeddings endpoint, as the warnings name it. */
  endpoint?: string;
  now?: () => number;
}): SearchIndex {
  const { keyword, db, embedder } = options;
  const minSimilarity = options.minSimilarity ?? 0.35;
  const now = options.now ?? Date.now;
  let lastWarning = Number.NEGATIVE_INFINITY;
  let fallbacks = 0;

  /** The query's vector, or null (warned about) when the endpoint fails. */
  async function embedQuery(query: string): Promise<number[] | null> {
    try {
      const [embedding] = await embedder.embed([query]);
      if (fallbacks > 0) {
        options.logger?.info(
          { endpoint: options.endpoint, keyword_only_searches: fallbacks },
          'embeddings endpoint answers again: searches use vectors again',
        );
        fallbacks = 0;
        lastWarning = Number.NEGATIVE_INFINITY;
      }
      return embedding!;
    } catch (error) {
      fallbacks++;
      if (now() - lastWarning >= FALLBACK_WARNING_INTERVAL_MS) {
        lastWarning = now();
        options.logger?.warn(
          { endpoint: options.endpoint, cause: causeChain(error), keyword_only_searches: fallbacks },
          'embedding request failed: searching with keywords only until it answers again',
        );
      }
      return null;
    }
  }

  type MissingChunk = { document_id: string; chunk_id: number; title: string; content: string };
  async function embedChunks(chunks: MissingChunk[]) {
    for (let j = 0; j < chunks.length; j += 64) {
      const batch = chunks.slice(j, j + 64);
      const vectors = await embedder.embed(batch.map((c) => `${c.title}\n${c.content}`));
      await searchRepository.upsertEmbeddings(
        db,
        batch.map((c, n) => ({ document_id: c.document_id, chunk_id: c.chunk_id, embedding: vectors[n]! })),
      );
    }
  }

  /** Whether chunks may lack vectors: until a back-fill finds none, and again after a failed embedding. */
  let mayMiss = true;
  async function embedMissing(documentIds: string[]) {
    try {
      for (let i = 0; i < documentIds.length; i += 200)
        await embedChunks(await searchRepository.chunksWithoutEmbedding(db, documentIds.slice(i, i + 200)));
    } catch (error) {
      mayMiss = true;
      throw error;
    }
  }

  return {
    kind: 'hybrid',
    async indexDocuments(documents) {
      await keyword.indexDocuments(documents);
      await embedMissing(documents.map((d) => d.document_id));
    },
    async backfillEmbeddings(limit) {
      if (!mayMiss) return null;
      const chunks = await searchRepository.chunksMissingEmbeddings(db, limit);
      if (!chunks.length) {
        mayMiss = false;
        return null;
      }
      await embedChunks(chunks);
      return { embedded: chunks.length, remaining: await searchRepository.countChunksMissingEmbeddings(db) };
    },
    async deleteDocuments(documentIds) {
      await keyword.deleteDocuments(documentIds);
      if (documentIds.length) await searchRepository.deleteEmbeddings(db, documentIds);
    },
    async close() {
      await keyword.close?.();
    },
    async maintain() {
      await keyword.maintain?.();
    },
    async clear() {
      await keyword.clear();
      await searchRepository.clearEmbeddings(db);
    },
    async search(request) {
      // Phrases, exclusions and `or` are exact constraints that vectors cannot honour: keywords only.
      const parsed = parseQuery(request.query);
      const exact = parsed.groups.some((g) => g.length > 1 || g.some((o) => o.phrase || o.negated));
      if (!parsed.positiveWords.length || exact) return keyword.search(request);
      const embedding = await embedQuery(request.query);
      if (!embedding) {
        mayMiss = true;
        return keyword.search(request);
      }
      const depth = Math.max(request.limit, 50);
      const [keywordHits, vectorHits] = await Promise.all([
        // Rows follow the fused order, not the keyword list's: the caller loads them.
        keyword.search({ ...request, limit: depth, rows: undefined }),
        searchRepository.vectorSearch(db, {
          embedding,
          filters: request.filters,
          access: request.access,
          limit: depth,
        }),
      ]);
      return reciprocalRankFusion(
        [keywordHits, vectorHits.filter((h) => h.score >= minSimilarity)],
        request.limit,
      );
    },
  };
}
