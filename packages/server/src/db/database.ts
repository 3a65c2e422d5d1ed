import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { vector } from '@electric-sql/pglite-pgvector';
import {
  type Expression,
  Kysely,
  type KyselyPlugin,
  type LogEvent,
  PGliteDialect,
  PostgresDialect,
  sql,
  type Transaction,
} from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import pg from 'pg';
import type { Config } from '../config.ts';
import { StartupError } from '../errors.ts';
import { acquireDataDirLock } from './lockfile.ts';
import { PGliteThread, pgliteThreadDialect } from './pglite-thread.ts';
import { ReadRouter } from './replicas.ts';
import { isTransientConflict } from './sql-errors.ts';
import { StatementGate } from './statement-gate.ts';

export { inBackground, inOneTurn, outsideBackground, sinceRequestStatement } from './pglite-thread.ts';

export { isLockNotAvailable, isTransientConflict, isUniqueViolation } from './sql-errors.ts';

import type { Database } from './schema.ts';

export type Db = Kysely<Database>;
export type DbExecutor = Kysely<Database> | Transaction<Database>;

/**
 * A subquery's values as an array, `[]` when it finds none. Raw SQL: the builder has no `ARRAY(subquery)`
 * constructor (the compiled subquery brings its parentheses), and `array_agg` answers null for no rows.
 */
export function arrayOf<T>(subquery: Expression<{ [column: string]: T }>) {
  return sql<T[]>`array${subquery}`;
}

export interface DatabaseHandle {
  db: Db;
  /**
   * The handle for reads that may be served by a streaming replica (DATABASE_READ_URLS): searches,
   * listings, history. The same as `db` without replicas. Writes and reads of one's own writes use `db`.
   */
  read: Db;
  /** The replica routing, when replicas are configured (status for diagnostics and tests). */
  replicas?: ReadRouter;
  kind: 'pglite' | 'postgres';
  /** The node-postgres pool in server mode; used by stores that speak pg directly. */
  pool?: pg.Pool;
  /** Postgres: the admission of background statements on `db`'s pool (`StatementGate`). */
  gate?: StatementGate;
  /** Embedded only: a consistent gzipped tarball of the data directory (PGlite's layout); see snapshot.ts. */
  snapshot?: () => Promise<Uint8Array>;
  /** Embedded only: the size of PGlite's WebAssembly memory (it grows and never shrinks), for diagnostics. */
  wasmMemoryBytes?: () => number;
  close(): Promise<void>;
}

/** int8 and numeric arrive as strings from node-postgres; both databases hand out numbers. */
const toNumber = (value: string) => Number(value);
const PG_INT8 = 20;
const PG_NUMERIC = 1700;
pg.types.setTypeParser(PG_INT8, toNumber);
pg.types.setTypeParser(PG_NUMERIC, toNumber);

const PGLITE_PARSERS = { [PG_INT8]: toNumber, [PG_NUMERIC]: toNumber };

/** PGlite's buffer cache by default (Postgres's own default is 128 MB; see KAS_PGLITE_SHARED_BUFFERS_MB). */
export const DEFAULT_PGLITE_SHARED_BUFFERS_MB = 16;

/**
 * The most files PGlite's Postgres keeps open at once (its `max_files_per_process`, 1000 by default):
 * Postgres holds each relation file it touched open in a cache, so with the default the server's open
 * file descriptors grew for as long as traffic, maintenance and VACUUM reached new tables, indexes and
 * forks (the soak: 145 → 198 in ten minutes, ~510 after touching every table). Beyond this Postgres
 * closes its least recently used files and reopens them on demand (cheap: the OS caches them).
 */
export const PGLITE_MAX_FILES = 128;

/**
 * Opens PGlite with our extensions; `loadDataDir` starts from a dump (tests clone a migrated template).
 * The buffer cache lives in PGlite's WebAssembly memory, which never shrinks, so it is sized small:
 * the operating system's page cache keeps the data files warm anyway.
 */
export async function openPGlite(
  dataDir: string | undefined,
  extra: { loadDataDir?: Blob; sharedBuffersMb?: number } = {},
): Promise<PGlite> {
  const { sharedBuffersMb = DEFAULT_PGLITE_SHARED_BUFFERS_MB, ...rest } = extra;
  const options = {
    extensions: { pg_trgm, vector },
    parsers: PGLITE_PARSERS,
    startParams: [
      ...PGlite.defaultStartParams,
      '-c',
      `shared_buffers=${sharedBuffersMb}MB`,
      '-c',
      `max_files_per_process=${PGLITE_MAX_FILES}`,
    ],
    ...rest,
  };
  return dataDir ? PGlite.create(dataDir, options) : PGlite.create(options);
}

export interface CreateDbOptions {
  /** An already open PGlite (tests clone a migrated template into memory). */
  pglite?: PGlite;
  /** Take no lock: only for in-memory databases. */
  inMemory?: boolean;
  poolSize?: number;
  /** Told about errors of idle pooled connections (a restarted or failed-over Postgres). */
  onPoolError?: (error: Error) => void;
  /** Told about every statement that took at least `slowQueryMs` (its SQL text, never its parameters). */
  onSlowQuery?: (sql: string, ms: number) => void;
  /** 0: no statement is reported. */
  slowQueryMs?: number;
  /** Told while start-up waits for a Postgres that does not accept connections yet (a line for the log). */
  onWaiting?: (message: string) => void;
  /** A replica was skipped or taken back for reads (DATABASE_READ_URLS). */
  onReplicaChange?: (event: { url: string; usable: boolean; reason: string }) => void;
}

/** Connection failures that a Postgres starting (or its container, its DNS name) resolves by itself. */
const TRANSIENT_CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  // cannot_connect_now: "the database system is starting up" (or shutting down, or in recovery)
  '57P03',
  // too_many_connections: others will leave
  '53300',
]);

function isTransientConnectError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string') return TRANSIENT_CONNECT_CODES.has(code);
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|ECONNREFUSED/i.test(message);
}

/** Where DATABASE_URL points, without its password: `user@host:port/database`. */
export function describeDatabaseUrl(connectionString: string): {
  where: string;
  user: string;
  database: string;
} {
  try {
    const url = new URL(connectionString);
    const host = url.hostname || url.searchParams.get('host') || 'localhost';
    const database =
      decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres';
    return {
      where: `${host}:${url.port || 5432}/${database}`,
      user: decodeURIComponent(url.username) || 'postgres',
      database,
    };
  } catch {
    return { where: 'DATABASE_URL', user: 'postgres', database: 'postgres' };
  }
}

/**
 * Waits until Postgres accepts a connection, for up to KAS_DB_CONNECT_TIMEOUT_S: a container that starts
 * before its database waits for it. A refused password or a missing database does not go away by
 * waiting: it fails at once, in one line that says which.
 */
export async function waitForPostgres(
  connectionString: string,
  timeoutS: number,
  onWaiting: (message: string) => void = () => {},
): Promise<void> {
  const { where, user, database } = describeDatabaseUrl(connectionString);
  const deadline = Date.now() + timeoutS * 1000;
  let lastReport = 0;
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client({
      connectionString,
      connectionTimeoutMillis: Math.max(1000, Math.min(10_000, deadline - Date.now())),
    });
    // A connection dropped while it is being made is reported through connect()'s rejection.
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end().catch(() => {});
      if (attempt > 1) onWaiting(`Postgres at ${where} accepts connections now`);
      return;
    } catch (error) {
      await client.end().catch(() => {});
      const code = (error as { code?: unknown }).code;
      const cause = error instanceof Error ? error.message : String(error);
      if (code === '28P01')
        throw new StartupError(
          `Postgres at ${where} refused the password of user "${user}": check the password in DATABASE_URL.`,
        );
      if (code === '28000')
        throw new StartupError(`Postgres at ${where} refused user "${user}": ${cause} (check DATABASE_URL).`);
      if (code === '3D000')
        throw new StartupError(
          `The database "${database}" does not exist on Postgres at ${where.split('/')[0]}: create it ` +
            `(createdb ${database}, or CREATE DATABASE) or fix the name in DATABASE_URL.`,
        );
      if (!isTransientConnectError(error))
        throw new StartupError(`Could not connect to Postgres at ${where}: ${cause}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new StartupError(
          `Postgres at ${where} did not accept connections within ${timeoutS} s (last error: ${cause}). ` +
            'Check that it runs and DATABASE_URL points to it; KAS_DB_CONNECT_TIMEOUT_S sets how long to wait.',
        );
      if (Date.now() - lastReport >= 10_000) {
        lastReport = Date.now();
        onWaiting(
          `waiting for Postgres at ${where} (${cause}); retrying for up to ${Math.ceil(left / 1000)} s more`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, left)));
    }
  }
}

/** Kysely's `log` hook reporting slow statements, or nothing when none are to be reported. */
function slowQueryLog(options: CreateDbOptions): { log?: (event: LogEvent) => void } {
  const { onSlowQuery, slowQueryMs = 0 } = options;
  if (!onSlowQuery || slowQueryMs <= 0) return {};
  return {
    log(event) {
      if (event.queryDurationMillis >= slowQueryMs)
        onSlowQuery(event.query.sql, Math.round(event.queryDurationMillis));
    },
  };
}

/**
 * Lets the event loop turn after every embedded statement. PGlite runs a statement synchronously on this
 * thread and settles its promise without any I/O, so a loop of statements (a document's chunks, a
 * maintenance round) runs as one chain of microtasks: no request (not even `/api/health`) was read
 * until the whole loop ended, seconds later. One turn costs microseconds when nothing waits.
 */
const yieldAfterEachStatement: KyselyPlugin = {
  transformQuery: (args) => args.node,
  transformResult: async (args) => {
    await nextTurn();
    return args.result;
  },
};

/** Most distinct statements prepared per process; beyond it (say, IN lists of every length) run unnamed. */
const MAX_PREPARED = 1000;

/**
 * Runs every parameterised statement as a named prepared statement on each pooled connection, so
 * Postgres parses it once per connection instead of on every request (Kysely sends unnamed ones).
 * Names come from the statement text, the same in every process.
 */
function prepareStatements(pool: pg.Pool): void {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (!name && names.size < MAX_PREPARED) {
      name = `kas_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
      names.set(text, name);
    }
    return name;
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
      const name = typeof config === 'string' && Array.isArray(values) ? nameOf(config) : undefined;
      return name ? query({ name, text: config, values }, callback) : query(config, values, callback);
    };
  });
}

/**
 * A request's statements that follow one another within this long count as one (a search's three, with
 * kas's work in between), so background statements wait for the last of them.
 */
const FOREGROUND_LINGER_MS = 10;
const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|savepoint|release)\b/i;

/**
 * A background statement waits at most this long for its turn among the others (`KAS_BACKGROUND_STATEMENTS`)
 * before it goes anyway: longer than the longest background statement meant to run (a group of chunks,
 * a maintenance step), short enough to end a wait on a lock held by a transaction whose next statement
 * waits for the turn.
 */
const BACKGROUND_TURN_MAX_WAIT_MS = 2000;

/**
 * Background statements on this pool hold back while a request's run, and take turns
 * (`StatementGate`). Only the promise form of `query` (Kysely's) is gated; a callback or a cursor goes
 * as it is.
 */
function gateStatements(pool: pg.Pool, maxWaitMs: number, maxBackground: number): StatementGate {
  const gate = new StatementGate({
    lingerMs: FOREGROUND_LINGER_MS,
    maxWaitMs,
    maxBackground,
    maxSlotWaitMs: BACKGROUND_TURN_MAX_WAIT_MS,
  });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const plain = typeof args[0] === 'string' && args.length <= 2 && typeof args[1] !== 'function';
      // A transaction's begin and end go at once: they cost nothing, and the end releases its locks.
      return plain && !TRANSACTION_CONTROL.test(args[0] as string)
        ? gate.run(() => query(...args) as Promise<unknown>)
        : query(...args);
    };
  });
  return gate;
}

/** A data directory that cannot be used, said in one line (a file in its place, no permission, a read-only disk). */
function dataDirError(dataDir: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  const path = (error as NodeJS.ErrnoException).path ?? dataDir;
  if (code === 'EEXIST' || code === 'ENOTDIR')
    return new StartupError(
      `KAS_DATA_DIR ${dataDir} cannot be used: ${code === 'EEXIST' ? `${path} is a file` : `a part of ${path} is a file`}, ` +
        'not a directory. Point KAS_DATA_DIR at a directory (it is created when missing).',
    );
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
    return new StartupError(
      `KAS_DATA_DIR ${dataDir} cannot be used: ${code === 'EROFS' ? 'the file system is read-only' : 'permission denied'} at ${path}.`,
    );
  return error;
}

export async function createDatabase(config: Config, options: CreateDbOptions = {}): Promise<DatabaseHandle> {
  if (config.DATABASE_URL) {
    await waitForPostgres(config.DATABASE_URL, config.KAS_DB_CONNECT_TIMEOUT_S, options.onWaiting);
    const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: options.poolSize ?? 10 });
    // Without a listener, an idle connection dropped by the server would crash the process.
    pool.on('error', options.onPoolError ?? (() => {}));
    prepareStatements(pool);
    const gate = gateStatements(
      pool,
      config.KAS_BACKGROUND_YIELD_MS,
      config.KAS_BACKGROUND_STATEMENTS ||
        config.KAS_INGEST_WRITERS ||
        Math.max(1, Math.floor(availableParallelism() / 2)),
    );
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...slowQueryLog(options) });
    if (!config.DATABASE_READ_URLS.length)
      return { db, read: db, kind: 'postgres', pool, gate, close: () => db.destroy() };
    const replicas = new ReadRouter({
      primary: pool,
      primaryUrl: config.DATABASE_URL,
      replicaUrls: config.DATABASE_READ_URLS,
      maxLagMs: config.KAS_REPLICA_MAX_LAG_MS,
      poolSize: options.poolSize ?? 10,
      onPool: prepareStatements,
      ...(options.onReplicaChange ? { onChange: options.onReplicaChange } : {}),
    });
    const read = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: replicas.pool() }),
      ...slowQueryLog(options),
    });
    try {
      await replicas.start();
    } catch (error) {
      await replicas.close();
      await db.destroy();
      throw error;
    }
    return {
      db,
      read,
      replicas,
      kind: 'postgres',
      pool,
      gate,
      close: async () => {
        await read.destroy();
        await replicas.close();
        await db.destroy();
      },
    };
  }
  if (!options.pglite && !options.inMemory) return openDataDirOnThread(config, options);
  const instance =
    options.pglite ?? (await openPGlite(undefined, { sharedBuffersMb: config.KAS_PGLITE_SHARED_BUFFERS_MB }));
  // In this thread (tests, in-memory databases). Kysely's own PGlite dialect runs each transaction under
  // PGlite's exclusive lock, so a rolled-back transaction can never be committed by a concurrent one
  // (kysely-pglite loses rollbacks).
  const db = new Kysely<Database>({
    dialect: new PGliteDialect({ pglite: instance }),
    plugins: [yieldAfterEachStatement],
    ...slowQueryLog(options),
  });
  return {
    db,
    read: db,
    kind: 'pglite',
    snapshot: async () => new Uint8Array(await (await instance.dumpDataDir('gzip')).arrayBuffer()),
    wasmMemoryBytes: () =>
      (instance as unknown as { mod?: { wasmMemory?: WebAssembly.Memory } }).mod?.wasmMemory?.buffer
        .byteLength ?? 0,
    close: async () => {
      await db.destroy();
      if (!instance.closed) await instance.close();
    },
  };
}

/**
 * The server's embedded database: its data directory, locked against a second process, opened on a
 * thread of its own (see pglite-thread.ts for why).
 */
async function openDataDirOnThread(config: Config, options: CreateDbOptions): Promise<DatabaseHandle> {
  const pgdata = join(config.KAS_DATA_DIR, 'pgdata');
  let release = () => {};
  try {
    release = acquireDataDirLock(config.KAS_DATA_DIR);
    mkdirSync(pgdata, { recursive: true });
  } catch (error) {
    release();
    throw dataDirError(config.KAS_DATA_DIR, error);
  }
  let thread: PGliteThread;
  try {
    thread = await PGliteThread.start({ pgdata, sharedBuffersMb: config.KAS_PGLITE_SHARED_BUFFERS_MB });
  } catch (error) {
    release();
    throw error;
  }
  const db = new Kysely<Database>({ dialect: pgliteThreadDialect(thread), ...slowQueryLog(options) });
  return {
    db,
    read: db,
    kind: 'pglite',
    snapshot: async () => (await thread.request('snapshot')) as Uint8Array,
    wasmMemoryBytes: () => thread.memoryBytes,
    close: async () => {
      try {
        await db.destroy();
      } finally {
        release();
      }
    },
  };
}

const MIGRATIONS_DIR = join(import.meta.dirname, 'migrations');

/** Loads `migrations/NNNN_name.ts`; each exports `up(db)`. */
class DirectoryMigrationProvider implements MigrationProvider {
  /** Told before each migration runs. */
  onApply: ((name: string) => void) | undefined;

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}_.+\.ts$/.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const name = file.replace(/\.ts$/, '');
      const migration = (await import(join(MIGRATIONS_DIR, file))) as Migration;
      migrations[name] = {
        ...migration,
        up: async (db) => {
          this.onApply?.(name);
          await migration.up(db);
        },
      };
    }
    return migrations;
  }
}

export async function migrateToLatest(
  db: Kysely<any>,
  onProgress?: (message: string) => void,
): Promise<string[]> {
  const provider = new DirectoryMigrationProvider();
  // Migrations are written in parallel branches and land in any order: one numbered below the last
  // applied one is still applied (each migration touches its own tables, so their order between
  // branches does not matter), where Kysely would otherwise refuse to start.
  const migrator = new Migrator({ db, provider, allowUnorderedMigrations: true });
  if (onProgress) {
    // A first start (or an upgrade) runs them all, which takes seconds on a slow machine: say so, and
    // where it is every 2 s, so the wait is not silent.
    const pending = (await migrator.getMigrations()).filter((m) => !m.executedAt).length;
    if (pending) {
      onProgress(`applying ${pending} database migration${pending > 1 ? 's' : ''} (first start or upgrade)`);
      let done = 0;
      let reported = Date.now();
      provider.onApply = (name) => {
        done++;
        if (Date.now() - reported < 2000) return;
        reported = Date.now();
        onProgress(`migrating: ${done}/${pending} (${name})`);
      };
    }
  }
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Runs a whole transaction again when Postgres refused it as a deadlock's victim or for serialisation
 * (e.g. a document's chunks replaced while search maintenance re-weights the same rows in another order).
 */
export async function retryOnConflict<T>(work: () => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= tries || !isTransientConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.random() * 30));
    }
  }
}

/**
 * Runs several reads in one snapshot (a repeatable-read transaction): a write committing between them
 * is seen by none or all of them, never by some (a status read statement by statement could show a
 * run as ended with its results not yet counted).
 */
export function inOneSnapshot<T>(db: Db, read: (db: DbExecutor) => Promise<T>): Promise<T> {
  return db.transaction().setIsolationLevel('repeatable read').execute(read);
}
