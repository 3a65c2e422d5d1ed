import type { AuthCache } from './auth/auth-cache.ts';
import type { OidcVerifier } from './auth/oidc.ts';
import type { Actor } from './auth/roles.ts';
import type { StopRegistry } from './chat/stop-registry.ts';
import type { Config } from './config.ts';
import type { IndexingState } from './connectors/indexing-state.ts';
import type { SourceRegistry } from './connectors/sources/source.ts';
import type { CpuPool } from './cpu-pool/cpu-pool.ts';
import type { SecretBox } from './crypto/secret-box.ts';
import type { Db } from './db/database.ts';
import type { StatementGate } from './db/statement-gate.ts';
import type { TextThread } from './db/text-thread.ts';
import type { IngestionState } from './documents/ingestion-queue.ts';
import type { LlmProvider } from './llm/llm.types.ts';
import type { Logger } from './logger.ts';
import type { Outbound } from './outbound/outbound.ts';
import type { AuthFailureLimiter, RateLimiter } from './rate-limit.ts';
import type { SearchIndex } from './search/search-index.ts';

/** Long-lived dependencies, built once per process by `createRuntime`. */
export interface AppDeps {
  config: Config;
  /** The primary: writes, and reads that must see this process's own writes. */
  db: Db;
  /**
   * Reads that a streaming replica may serve (searches, chat retrieval, listings, history) when
   * DATABASE_READ_URLS is set: never behind the last access change, at most KAS_REPLICA_MAX_LAG_MS behind
   * otherwise, the primary when no replica qualifies. The same handle as `db` without replicas.
   */
  dbRead: Db;
  dbKind: 'pglite' | 'postgres';
  /** Postgres: the admission of background statements (bulk ingestion gives its extra writers turns). */
  dbGate: StatementGate | null;
  /** Embedded, `KAS_PGLITE_TEXT_THREAD`: computes a bulk load's tsvectors beside the database's thread. */
  textThread: TextThread | null;
  logger: Logger;
  rateLimiter: RateLimiter;
  /** Credential → actor and the key list; on Postgres with cross-process invalidation (auth/pg-auth-cache.ts). */
  authCache: AuthCache | null;
  /** Encrypts credentials and tokens at rest. */
  secrets: SecretBox;
  /** The document search index (Postgres full-text, Meilisearch, or hybrid with vectors). */
  search: SearchIndex;
  /** The chat model: a configured provider or the built-in answerer. */
  llm: LlmProvider;
  /** The ingestion API's group-commit queue. */
  ingestion: IngestionState;
  /** The chat generations running in this process, so a stop reaches them. */
  stopRegistry: StopRegistry;
  /** Embedded only: takes a consistent snapshot of the database (`kas backup`). */
  snapshot: (() => Promise<Uint8Array>) | null;
  /** Failed authentications per client address (keys cannot be guessed at speed). */
  authFailures: AuthFailureLimiter;
  /** Refused webhook deliveries per client address, counted apart from authentications (`webhookProcedure`). */
  webhookFailures: AuthFailureLimiter;
  /** The one HTTP client for the outside world (address guard, caps, retries); a drop-in `fetch`. */
  outbound: Outbound;
  /** Connector sources by name (`web`, `file`, `github`, …). */
  sources: SourceRegistry;
  /** This process's connector worker: its id and the attempts it runs. */
  indexing: IndexingState;
  /** Verifies OIDC bearer tokens when `KAS_OIDC_ISSUER` is set; null otherwise. */
  oidc: OidcVerifier | null;
  /** Worker threads for CPU-heavy steps (parsing files, chunking large documents), bounded in memory and time. */
  cpu: CpuPool;
}

/**
 * What a service function takes as `ctx`: the parts of the application's dependencies it uses (so
 * tests and workers pass only those), plus the caller where it acts for one.
 */
export type ServiceContext<K extends keyof AppDeps = keyof AppDeps> = Pick<AppDeps, K>;
/** A service context with the authenticated caller. */
export type ActorContext<K extends keyof AppDeps = keyof AppDeps> = ServiceContext<K> & { actor: Actor };

/** What the transport knows about one request; only the middlewares in trpc.ts read it, never a service. */
export interface RequestInfo {
  /** The `Authorization` header as sent. */
  authorization: string | undefined;
  /** The client's network address (failed-authentication limits). */
  clientAddress: string | undefined;
  /** Sets a response header (rate-limit headers), ignored once the answer has started. */
  setHeader(name: string, value: string): void;
  /** Aborted when the client goes away (streams decide themselves whether to stop). */
  signal: AbortSignal | undefined;
  /**
   * The OAuth resource (RFC 8707 audience) the request is addressed to, on the surfaces that accept
   * OAuth access tokens (the MCP endpoint); unset elsewhere, where such tokens are refused.
   */
  resource?: string | undefined;
  /** Told the caller once the credential is authenticated (the transport's request log names it). */
  onActor?(actor: Actor): void;
}

/**
 * Per-request context: the application's dependencies, the request, and the caller once the auth
 * middleware has narrowed it (`next({ ctx: { actor } })` copies these three fields). Routers hand
 * services `serviceContext(ctx)` (trpc.ts), never this.
 */
export interface Context {
  deps: AppDeps;
  req: RequestInfo;
  /** Set by the auth middleware on authenticated procedures. */
  actor: Actor | null;
}

/** The context of one request (trpc examples/next-prisma-starter `createContextInner`). */
export function createInnerContext(deps: AppDeps, request: Partial<RequestInfo> = {}): Context {
  return {
    deps,
    req: {
      authorization: request.authorization,
      clientAddress: request.clientAddress,
      setHeader: request.setHeader ?? (() => {}),
      signal: request.signal,
      resource: request.resource,
      onActor: request.onActor,
    },
    actor: null,
  };
}
