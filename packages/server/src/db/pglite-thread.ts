import { AsyncLocalStorage } from 'node:async_hooks';
import { Worker } from 'node:worker_threads';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  IdentifierNode,
  type Kysely,
  PGliteAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  RawNode,
} from 'kysely';

/**
 * The embedded database on a thread of its own (a worker thread holding PGlite), driven from the main
 * thread through Kysely like any database.
 *
 * Why: PGlite runs every statement synchronously on the thread that holds it. On the main thread, each
 * statement — a slice of a large document's chunks, a search's ranking, a maintenance step — held the
 * event loop for its whole duration (10–300 ms each under load on 2 cores), so `/api/health` waited on
 * whatever statement was running: p99 0.25 s while 8 clients ingested 5 MB documents, even with every
 * statement kept short (3–5 s before they were). On its own thread the statements no longer hold the
 * event loop: requests are read, authenticated and answered while the database works, and only the
 * requests that need the database wait for it (measured by `npm run bench -w test -- responsiveness`).
 * Statements cross the thread boundary as messages (parameters and rows are structured-cloned: ~tens of
 * microseconds per statement); errors cross as their fields (`code`, `constraint`, …), without the
 * statement's parameters.
 */

/** What the worker is started with. */
export interface ThreadStart {
  /** The data directory; none: a database in memory (the text thread, text-thread.ts). */
  pgdata?: string | undefined;
  sharedBuffersMb?: number | undefined;
}

export type ThreadRequest =
  | { id: number; op: 'query'; sql: string; parameters: readonly unknown[] }
  | { id: number; op: 'begin' | 'commit' | 'rollback' | 'snapshot' | 'close' };

export interface ThreadReply {
  id: number;
  result?: unknown;
  error?: { message: string; [field: string]: unknown } | undefined;
  /** PGlite's WebAssembly memory after the request (diagnostics). */
  memory: number;
}

type Op = ThreadRequest['op'];

/**
 * Marks the work that runs inside as background (bulk ingestion, search maintenance): on the embedded
 * database's one connection, whoever else waits for it goes first. (Per asynchronous call chain: it
 * holds no state of its own.)
 */
const backgroundWork = new AsyncLocalStorage<true>();

export function inBackground<T>(work: () => Promise<T>): Promise<T> {
  return backgroundWork.run(true, work);
}

/**
 * Runs `work` as a request's work even inside background work: for a worker's heartbeats, which must not
 * wait their turn behind bulk statements (a late heartbeat makes another worker take the job over).
 */
export function outsideBackground<T>(work: () => T): T {
  return backgroundWork.exit(work);
}

/** Whether the caller runs inside `inBackground`. */
export function isInBackground(): boolean {
  return backgroundWork.getStore() === true;
}

/** A request's statements that take one turn at the connection (`inOneTurn`). */
interface Turn {
  ended: boolean;
  /** Hands the connection on if it is kept for this turn between statements. */
  onEnd?: () => void;
}

const turns = new AsyncLocalStorage<Turn>();

/**
 * Runs `work` (a request's few statements, e.g. a search's) as one turn at the embedded database's
 * connection: it waits for the connection once, and keeps it between its statements (at most
 * TURN_GAP_MS idle) rather than queueing again behind bulk statements for each. On Postgres (a pool of
 * connections) it changes nothing.
 */
export async function inOneTurn<T>(work: () => Promise<T>): Promise<T> {
  if (turns.getStore() || isInBackground()) return work();
  const turn: Turn = { ended: false };
  try {
    return await turns.run(turn, work);
  } finally {
    turn.ended = true;
    turn.onEnd?.();
  }
}

/** When a request's statement last asked for the embedded database's connection (performance.now()). */
let lastRequestStatement = Number.NEGATIVE_INFINITY;

/** Milliseconds since a request's statement last asked for the embedded database's connection. */
export function sinceRequestStatement(): number {
  return performance.now() - lastRequestStatement;
}

/** Longest time the connection is kept idle for a turn's next statement. */
const TURN_GAP_MS = 15;

/** Background work waits at most this long while requests keep the connection busy (no starvation). */
const BACKGROUND_MAX_WAIT_MS = 100;

/**
 * The one connection, taken by one statement or transaction at a time; when it is freed, the oldest
 * waiting request goes next, background work only when no request waits (or once it has waited
 * `BACKGROUND_MAX_WAIT_MS`). So a search waits for the statement in progress, not for every statement
 * bulk work queued before it (Kysely's own lock wakes its waiters in arrival order). Keeping the
 * connection a few milliseconds after a request's statement for its next one (so that a search of
 * three statements waits once) measured no better: p99 213–270 ms instead of 154 ms, and ingestion
 * took twice as long.
 */
class ConnectionLock {
  #busy = false;
  readonly #waiting = { foreground: [] as Waiting[], background: [] as Waiting[] };
  /** When the oldest background waiter began to wait. */
  readonly #backgroundSince: number[] = [];
  /** The turn the connection is kept for between its statements (`inOneTurn`), and until when. */
  #keptFor: { turn: Turn; timer: NodeJS.Timeout } | undefined;

  async acquire(): Promise<void> {
    const request = !isInBackground();
    if (request) lastRequestStatement = performance.now();
    const turn = request ? turns.getStore() : undefined;
    if (turn && this.#keptFor?.turn === turn) {
      clearTimeout(this.#keptFor.timer);
      this.#keptFor = undefined;
      return;
    }
    if (!this.#busy) {
      this.#busy = true;
      return;
    }
    if (!request) this.#backgroundSince.push(performance.now());
    await new Promise<void>((go) =>
      (request ? this.#waiting.foreground : this.#waiting.background).push({ go, turn }),
    );
  }

  release(): void {
    const turn = isInBackground() ? undefined : turns.getStore();
    if (turn && !turn.ended) {
      // Another statement of the same turn waiting (run beside this one) goes next; otherwise the
      // connection waits a moment for the turn's next statement.
      const same = this.#waiting.foreground.findIndex((w) => w.turn === turn);
      if (same >= 0) {
        this.#waiting.foreground.splice(same, 1)[0]!.go();
        return;
      }
      const handOn = () => {
        if (this.#keptFor?.turn !== turn) return;
        clearTimeout(this.#keptFor.timer);
        this.#keptFor = undefined;
        this.#handOn();
      };
      this.#keptFor = { turn, timer: setTimeout(handOn, TURN_GAP_MS) };
      turn.onEnd = handOn;
      return;
    }
    this.#handOn();
  }

  #handOn(): void {
    const starving =
      (this.#backgroundSince[0] ?? Number.POSITIVE_INFINITY) < performance.now() - BACKGROUND_MAX_WAIT_MS;
    const next =
      (starving ? this.#nextBackground() : undefined) ??
      this.#waiting.foreground.shift() ??
      this.#nextBackground();
    if (next) next.go();
    else this.#busy = false;
  }

  #nextBackground(): Waiting | undefined {
    this.#backgroundSince.shift();
    return this.#waiting.background.shift();
  }
}

interface Waiting {
  go(): void;
  turn: Turn | undefined;
}

/** The worker thread and the requests waiting for its answers. */
export class PGliteThread {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  #lastId = 0;
  #memory = 0;
  #stopped: Error | undefined;

  private constructor(worker: Worker) {
    this.#worker = worker;
    worker.on('message', (reply: ThreadReply) => {
      this.#memory = reply.memory;
      const waiting = this.#waiting.get(reply.id);
      if (!waiting) return;
      this.#waiting.delete(reply.id);
      if (reply.error) waiting.reject(Object.assign(new Error(reply.error.message), reply.error));
      else waiting.resolve(reply.result);
    });
    const stop = (error: Error) => {
      this.#stopped ??= error;
      for (const waiting of this.#waiting.values()) waiting.reject(this.#stopped);
      this.#waiting.clear();
    };
    worker.on('error', (error) => stop(error));
    worker.on('exit', (code) => stop(new Error(`the embedded database's thread stopped (exit ${code})`)));
  }

  /** Starts the thread and opens the database in it. */
  static async start(start: ThreadStart): Promise<PGliteThread> {
    const worker = new Worker(new URL('./pglite-worker.ts', import.meta.url), { workerData: start });
    const thread = new PGliteThread(worker);
    try {
      await thread.#expect(0);
    } catch (error) {
      await worker.terminate();
      throw error;
    }
    return thread;
  }

  #expect(id: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.#stopped) reject(this.#stopped);
      else this.#waiting.set(id, { resolve, reject });
    });
  }

  request(op: 'query', sql: string, parameters: readonly unknown[]): Promise<unknown>;
  request(op: Exclude<Op, 'query'>): Promise<unknown>;
  request(op: Op, sql?: string, parameters?: readonly unknown[]): Promise<unknown> {
    const id = ++this.#lastId;
    const answer = this.#expect(id);
    if (!this.#stopped) {
      this.#worker.postMessage(
        op === 'query' ? { id, op, sql: sql!, parameters: parameters! } : ({ id, op } as ThreadRequest),
      );
    }
    return answer;
  }

  /** PGlite's WebAssembly memory as last reported. */
  get memoryBytes(): number {
    return this.#memory;
  }

  /** Closes the database (a checkpoint on its files), then ends the thread. */
  async close(): Promise<void> {
    if (!this.#stopped) await this.request('close').catch(() => {});
    await this.#worker.terminate();
  }
}

class ThreadConnection implements DatabaseConnection {
  readonly #thread: PGliteThread;
  constructor(thread: PGliteThread) {
    this.#thread = thread;
  }
  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    return (await this.#thread.request('query', compiled.sql, compiled.parameters)) as QueryResult<R>;
  }
  // biome-ignore lint/correctness/useYield: streaming is not offered (as by Kysely's own PGlite driver).
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming is not supported by the embedded database.');
  }
}

/** One connection, handed out by `ConnectionLock` (whole transactions at a time). */
class ThreadDriver implements Driver {
  readonly #thread: PGliteThread;
  readonly #connection: ThreadConnection;
  readonly #lock = new ConnectionLock();
  constructor(thread: PGliteThread) {
    this.#thread = thread;
    this.#connection = new ThreadConnection(thread);
  }
  async init() {}
  async acquireConnection() {
    await this.#lock.acquire();
    return this.#connection;
  }
  async beginTransaction() {
    await this.#thread.request('begin');
  }
  async commitTransaction() {
    await this.#thread.request('commit');
  }
  async rollbackTransaction() {
    await this.#thread.request('rollback');
  }
  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    await connection.executeQuery(compile(savepointNode('savepoint', name), { queryId: '' }));
  }
  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await connection.executeQuery(compile(savepointNode('rollback to', name), { queryId: '' }));
  }
  async releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ) {
    await connection.executeQuery(compile(savepointNode('release', name), { queryId: '' }));
  }
  async releaseConnection() {
    this.#lock.release();
  }
  async destroy() {
    await this.#thread.close();
  }
}

/** A savepoint command, its name quoted (as Kysely's own drivers build it). */
function savepointNode(command: 'savepoint' | 'rollback to' | 'release', name: string) {
  return RawNode.createWithChildren([RawNode.createWithSql(`${command} `), IdentifierNode.create(name)]);
}

/** PGlite's adapter, but the driver serialises the connection itself (`ConnectionLock`), not Kysely. */
class ThreadAdapter extends PGliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

/** A Kysely dialect over the thread. */
export function pgliteThreadDialect(thread: PGliteThread): Dialect {
  return {
    createAdapter: () => new ThreadAdapter(),
    createDriver: () => new ThreadDriver(thread),
    createIntrospector: (db: Kysely<any>) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  };
}
