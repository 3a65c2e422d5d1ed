import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { join } from 'node:path';
import * as apiKeysService from './api-keys/api-keys.service.ts';
import { AuthCache } from './auth/auth-cache.ts';
import * as authSync from './auth/auth-sync.repository.ts';
import { createOidcVerifier } from './auth/oidc.ts';
import { PgAuthCache } from './auth/pg-auth-cache.ts';
import * as chatRepository from './chat/chat.repository.ts';
import { StopRegistry } from './chat/stop-registry.ts';
import type { Config } from './config.ts';
import { createIndexingState } from './connectors/indexing-state.ts';
import { createSourceRegistry } from './connectors/sources/index.ts';
import type { AppDeps } from './context.ts';
import { createCpuPool } from './cpu-pool/cpu-pool.ts';
import { createSecretBox, loadEncryptionKey } from './crypto/secret-box.ts';
import {
  type CreateDbOptions,
  createDatabase,
  type DatabaseHandle,
  describeDatabaseUrl,
  migrateToLatest,
} from './db/database.ts';
import { TextThread } from './db/text-thread.ts';
import * as documentsService from './documents/documents.service.ts';
import { createIngestionState } from './documents/ingestion-queue.ts';
import { createLlmProvider } from './llm/index.ts';
import { causeChain, createLogger, type Logger, loggableUrl } from './logger.ts';
import { processMemoryLimit, usesTextThread } from './memory.ts';
import { createOutbound, outboundOptionsFrom } from './outbound/outbound.ts';
import { createAuthFailureLimiter, createRateLimiter } from './rate-limit.ts';
import { createSearchIndex } from './search/create-search-index.ts';

export interface Runtime {
  deps: AppDeps;
  database: DatabaseHandle;
  /** Set when this start created an admin key (printed once by the CLI). */
  bootstrap: apiKeysService.BootstrapResult;
  close(): Promise<void>;
}

/** Opens the database, runs migrations, ensures an admin key exists and wires the dependencies. */
export async function createRuntime(
  config: Config,
  options: { logger?: Logger; db?: CreateDbOptions; skipBootstrap?: boolean } = {},
): Promise<Runtime> {
  const logger = options.logger ?? createLogger(config);
  let opening: NodeJS.Timeout | undefined;
  if (!options.db?.pglite && !options.db?.inMemory) {
    const firstStart = !config.DATABASE_URL && !existsSync(join(config.KAS_DATA_DIR, 'pgdata', 'PG_VERSION'));
    logger.info(
      config.DATABASE_URL
        ? `connecting to Postgres at ${describeDatabaseUrl(config.DATABASE_URL).where}`
        : firstStart
          ? `creating the embedded database in ${config.KAS_DATA_DIR} (first start: this takes a few seconds)`
          : `opening the embedded database in ${config.KAS_DATA_DIR}`,
    );
    // Opening the embedded database compiles its WebAssembly (and creates it on a first start): seconds
    // on a loaded machine, said every 5 s so the wait is not silent.
    const started = Date.now();
    if (!config.DATABASE_URL)
      opening = setInterval(
        () =>
          logger.info(`still opening the embedded database (${Math.round((Date.now() - started) / 1000)} s)`),
        5000,
      );
  }
  const database = await createDatabase(config, {
    onPoolError: (error) =>
      logger.warn({ err: error }, 'idle database connection failed; the pool will reconnect'),
    slowQueryMs: config.KAS_SLOW_QUERY_MS,
    onReplicaChange: ({ url, usable, reason }) =>
      usable
        ? logger.info({ replica: url }, 'read replica in use')
        : logger.warn({ replica: url, reason }, 'read replica skipped; its reads go to the primary'),
    onSlowQuery: (statement, ms) =>
      logger.warn({ ms, sql: statement.slice(0, 500) }, 'slow database statement'),
    onWaiting: (message) => logger.warn(message),
    ...options.db,
  }).finally(() => clearInterval(opening));
  let authCache: AuthCache | undefined;
  try {
    const applied = await migrateToLatest(database.db, (message) => logger.info(message));
    if (applied.length) logger.info({ migrations: applied }, 'database migrated');
    const outbound = createOutbound({
      ...outboundOptionsFrom(config),
      onFailure: ({ method, url, error }) =>
        logger.warn(
          {
            method,
            endpoint: loggableUrl(url),
            code: (error as { code?: unknown }).code,
            cause: causeChain(error),
          },
          'outbound request failed',
        ),
    });
    const authFailures = createAuthFailureLimiter({
      limit: config.KAS_AUTH_FAILURES_PER_MINUTE,
      pool: database.pool,
      ...(database.kind === 'postgres'
        ? { announce: (address: string, until: number) => authSync.publishBlock(database.db, address, until) }
        : {}),
    });
    const webhookFailures = createAuthFailureLimiter({
      limit: config.KAS_WEBHOOK_FAILURES_PER_MINUTE,
      pool: database.pool,
      keyPrefix: 'webhookfail',
    });
    // On a shared Postgres the cache is served only while its listener is healthy (auth/pg-auth-cache.ts).
    authCache =
      database.kind === 'postgres' && config.DATABASE_URL
        ? new PgAuthCache({
            connectionString: config.DATABASE_URL,
            db: database.db,
            logger,
            onBlock: (address, until) => authFailures.noteBlocked(address, until),
            failureLimit: config.KAS_AUTH_FAILURES_PER_MINUTE,
          })
        : new AuthCache();
    if (authCache instanceof PgAuthCache) await authCache.start();
    const deps: AppDeps = {
      config,
      db: database.db,
      dbRead: database.read,
      dbKind: database.kind,
      dbGate: database.gate ?? null,
      textThread:
        database.kind === 'pglite' && usesTextThread(config, processMemoryLimit(), availableParallelism())
          ? new TextThread({ logger })
          : null,
      logger,
      rateLimiter: createRateLimiter({ limit: config.KAS_RATE_LIMIT_PER_MINUTE, pool: database.pool }),
      authCache,
      secrets: createSecretBox(
        loadEncryptionKey(config, { inMemory: Boolean(options.db?.inMemory || options.db?.pglite) }),
      ),
      search: createSearchIndex(config, { db: database.db, read: database.read }, logger),
      llm: createLlmProvider(config, logger),
      ingestion: createIngestionState(),
      // On Postgres a stop may be requested in another process: the registry polls for it.
      stopRegistry: new StopRegistry(
        database.kind === 'postgres' ? (ids) => chatRepository.findStopRequests(database.db, ids) : null,
      ),
      snapshot: database.snapshot ?? null,
      authFailures,
      webhookFailures,
      outbound,
      sources: createSourceRegistry(),
      indexing: createIndexingState(`${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`),
      oidc: createOidcVerifier(config, outbound.fetch, logger),
      cpu: createCpuPool({
        threads: config.KAS_WORKER_THREADS,
        memoryMb: config.KAS_WORKER_MEMORY_MB,
        timeoutMs: config.KAS_WORKER_TIMEOUT_MS,
      }),
    };
    await documentsService.discardPendingDocuments({ ctx: deps });
    const bootstrap = options.skipBootstrap
      ? ({ created: false } as const)
      : await apiKeysService.ensureBootstrapAdminKey({ ctx: deps, value: config.KAS_BOOTSTRAP_ADMIN_KEY });
    return {
      deps,
      database,
      bootstrap,
      close: async () => {
        await authCache?.close();
        await deps.search.close?.();
        await deps.cpu.close();
        await deps.textThread?.close();
        await database.close();
      },
    };
  } catch (error) {
    await authCache?.close();
    await database.close();
    throw error;
  }
}
