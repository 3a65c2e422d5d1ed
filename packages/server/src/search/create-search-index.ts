import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import { createPostgresSearchIndex } from './postgres.ts';
import type { SearchIndex } from './search-index.ts';

/** Postgres full-text search by default; Meilisearch with MEILI_URL; fused with vectors with KAS_EMBEDDING_BASE_URL. */
export function createSearchIndex(_config: Config, db: Db, _logger: Logger): SearchIndex {
  return createPostgresSearchIndex(db);
}
