/**
 * `@kas/server/testing`: what tests, the e2e harness and the benchmarks use beyond `@kas/server`:
 * test databases and runtimes, seeded randomness, and the internals benchmarks measure directly.
 */
export { agentInput } from '../actions/actions.test-helpers.ts';
export { apiKeyActor } from '../auth/roles.ts';
export * as connectorsService from '../connectors/connectors.service.ts';
export { schedulerPass } from '../connectors/scheduler.ts';
export { extractHtml } from '../connectors/sources/html.ts';
export { inBackground } from '../db/database.ts';
export { chunkDocument } from '../documents/chunking.ts';
export { championsFor, championsToScore, DEFAULT_PLAN_LIMITS, planQuery } from '../search/bm25.ts';
export {
  createPostgresSearchIndex,
  keepOneSetOfAverages,
  type PostgresSearchIndex,
} from '../search/postgres.ts';
export { parseQuery, toTsquery } from '../search/query-parser.ts';
export * as searchRepository from '../search/search.repository.ts';
export * as searchService from '../search/search.service.ts';
export { ADMIN_SEARCH_CHUNKS, ADMIN_SEARCH_DOCUMENTS } from '../search/search.service.ts';
export type { AccessScope } from '../search/search-index.ts';
export { rng } from './random.ts';
export {
  createTestDatabase,
  type TestDatabase,
  type TestDbKind,
  testDbKind,
} from './test-runtime.ts';
