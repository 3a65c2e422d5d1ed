import { Kysely } from 'kysely';
import type { Logger } from '../logger.ts';
import { PGliteThread, pgliteThreadDialect } from './pglite-thread.ts';
import type { Database } from './schema.ts';

/**
 * A second embedded database, in memory and on a thread of its own, that computes what needs no data:
 * the tsvectors of chunks being ingested (documents.repository.ts, `textVectors`). The embedded
 * database runs every statement on its one thread; during a bulk load that thread is the bottleneck,
 * and `to_tsvector` was a third of its insert statement (~1 of ~3.2 ms per two-chunk document, against
 * ~0.2 ms to read the same vector as text). Computed by the same PGlite build with the same text
 * search configuration, the vectors are the ones the statement would compute.
 *
 * It costs memory (~250 MB while it runs, ~550 MB for its first seconds), so it is started only for a
 * bulk load (`ready` with `wanted`), takes ~4 s to start (the statement computes the vectors
 * meanwhile), and stops after `idleMs` without use. A thread that fails is dropped; the next bulk
 * load after `retryMs` starts another.
 */
export class TextThread {
  readonly #logger: Logger;
  readonly #idleMs: number;
  readonly #retryMs: number;
  #db: Kysely<Database> | undefined;
  #starting: Promise<void> | undefined;
  #idle: NodeJS.Timeout | undefined;
  #failedAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(options: { logger: Logger; idleMs?: number; retryMs?: number }) {
    this.#logger = options.logger;
    this.#idleMs = options.idleMs ?? 60_000;
    this.#retryMs = options.retryMs ?? 60_000;
  }

  /**
   * The thread's database when it runs (its idle clock starts again); otherwise undefined, and with
   * `wanted` it starts (not awaited).
   */
  ready(wanted: boolean): Kysely<Database> | undefined {
    if (this.#db) {
      this.#touch();
      return this.#db;
    }
    if (wanted && !this.#starting && !this.#closed && performance.now() - this.#failedAt >= this.#retryMs)
      this.#starting = this.#start().finally(() => {
        this.#starting = undefined;
      });
    return undefined;
  }

  /** Whether the thread runs now. */
  get running(): boolean {
    return this.#db !== undefined;
  }

  /** Drops the thread after a failure of its own (logged once per thread); the next `ready` may start another. */
  failed(error: unknown): void {
    if (!this.#db) return;
    this.#logger.warn(
      { err: error },
      'the text thread failed; chunks are vectorised by the database meanwhile',
    );
    this.#failedAt = performance.now();
    void this.#stop();
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#starting;
    await this.#stop();
  }

  async #start(): Promise<void> {
    try {
      const thread = await PGliteThread.start({ sharedBuffersMb: 1 });
      if (this.#closed) {
        await thread.close();
        return;
      }
      this.#db = new Kysely<Database>({ dialect: pgliteThreadDialect(thread) });
      this.#touch();
      this.#logger.debug('the text thread started');
    } catch (error) {
      this.#failedAt = performance.now();
      this.#logger.warn({ err: error }, 'the text thread could not start');
    }
  }

  #touch(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => void this.#stop(), this.#idleMs);
    this.#idle.unref();
  }

  async #stop(): Promise<void> {
    clearTimeout(this.#idle);
    const db = this.#db;
    this.#db = undefined;
    // Closes the thread (the dialect's driver).
    await db?.destroy().catch(() => {});
  }
}
