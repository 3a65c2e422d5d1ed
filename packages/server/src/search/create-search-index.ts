import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { causeChain, type Logger, loggableUrl } from '../logger.ts';
import { createOpenAiEmbedder, type Embedder, embeddingsUrl } from './embeddings.ts';
import { createHybridIndex } from './hybrid.ts';
import { createMeilisearchIndex } from './meilisearch.ts';
import { createPostgresSearchIndex } from './postgres.ts';
import type { SearchIndex } from './search-index.ts';

/** Postgres full-text search by default; Meilisearch with MEILI_URL; fused with vectors with KAS_EMBEDDING_BASE_URL. */
export function createSearchIndex(
  config: Config,
  { db, read }: { db: Db; read: Db },
  logger: Logger,
): SearchIndex {
  const keyword = config.MEILI_URL
    ? createMeilisearchIndex({
        host: config.MEILI_URL,
        apiKey: config.MEILI_API_KEY,
        indexUid: config.MEILI_INDEX,
      })
    : createPostgresSearchIndex(db, { logger, rowsWithRanking: !config.DATABASE_URL, read });
  if (!config.KAS_EMBEDDING_BASE_URL) return keyword;
  logger.debug({ keyword: keyword.kind }, 'hybrid search with embeddings');
  return createHybridIndex({
    keyword,
    db,
    embedder: withFailureLog(
      createOpenAiEmbedder({
        baseUrl: config.KAS_EMBEDDING_BASE_URL,
        model: config.KAS_EMBEDDING_MODEL,
        apiKey: config.KAS_EMBEDDING_API_KEY,
      }),
      embeddingsUrl(config.KAS_EMBEDDING_BASE_URL),
      logger,
    ),
  });
}

/** The embedder, with each failed request logged at `warn` with the endpoint and the real cause (never the key). */
function withFailureLog(embedder: Embedder, url: string, logger: Logger): Embedder {
  const endpoint = loggableUrl(url);
  return {
    async embed(texts) {
      try {
        return await embedder.embed(texts);
      } catch (error) {
        logger.warn({ endpoint, texts: texts.length, cause: causeChain(error) }, 'embedding request failed');
        throw error;
      }
    },
  };
}
