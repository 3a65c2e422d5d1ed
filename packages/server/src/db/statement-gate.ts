import { isInBackground } from './pglite-thread.ts';

/**
 * Admission control for background statements on Postgres (bulk ingestion, search maintenance): each
 * one waits while this process has a request's statement in flight, or had one end less than
 * `lingerMs` ago (a search runs three statements with a little work of kas's in between), and goes
 * anyway once it has waited `maxWaitMs` (no starvation). The statement already running is not stopped.
 *
 * Why: on a small machine the database's CPU is the bottleneck under heavy ingestion, not kas's code.
 * A writing transaction keeps one Postgres process busy indexing chunks (~1–2 ms each); with 2 cores
 * it left a search's own Postgres process a third of the CPU, and searches took ten times as long
 * as on a quiet server (the bare statements on their own connection likewise). Background statements
 * that hold back while a request's statements run leave them the CPU; the embedded database does the
 * same at its one connection (`ConnectionLock` in pglite-thread.ts).
 */
export class StatementGate {
  readonly #lingerMs: number;
  readonly #maxWaitMs: number;
  #inFlight = 0;
  #lastEnded = Number.NEGATIVE_INFINITY;
  #waiters: (() => void)[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(options: { lingerMs: number; maxWaitMs: number }) {
    this.#lingerMs = options.lingerMs;
    this.#maxWaitMs = options.maxWaitMs;
  }

  /** Whether a request's statement runs, or ended less than the linger ago. */
  get busy(): boolean {
    return this.#inFlight > 0 || performance.now() - this.#lastEnded < this.#lingerMs;
  }

  /** Runs a statement: a request's at once (counted), background work's when no request's runs. */
  async run<T>(statement: () => Promise<T>): Promise<T> {
    if (isInBackground()) {
      await this.#admitted();
      return statement();
    }
    this.#inFlight++;
    try {
      return await statement();
    } finally {
      this.#inFlight--;
      this.#lastEnded = performance.now();
      this.#wakeLater();
    }
  }

  #admitted(): Promise<void> {
    if (!this.busy || this.#maxWaitMs <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let done = false;
      const go = () => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        resolve();
      };
      const deadline = setTimeout(go, this.#maxWaitMs);
      this.#waiters.push(go);
      this.#wakeLater();
    });
  }

  /** Once the linger after the last request's statement is over, every waiting statement goes. */
  #wakeLater(): void {
    if (this.#timer || !this.#waiters.length || this.#inFlight > 0) return;
    const check = () => {
      this.#timer = undefined;
      // A request's statement began meanwhile: its end calls this again.
      if (!this.#waiters.length || this.#inFlight > 0) return;
      const left = this.#lingerMs - (performance.now() - this.#lastEnded);
      if (left > 0) {
        this.#timer = setTimeout(check, left);
        return;
      }
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const go of waiters) go();
    };
    this.#timer = setTimeout(check, Math.max(0, this.#lingerMs - (performance.now() - this.#lastEnded)));
  }
}
