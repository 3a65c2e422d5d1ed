import { isInBackground } from './pglite-thread.ts';

/**
 * Admission control for background statements on Postgres (bulk ingestion, search maintenance):
 * - each one waits while this process has a request's statement in flight, or had one end less than
 *   `lingerMs` ago (a search runs three statements with a little work of kas's in between), and goes
 *   anyway once it has waited `maxWaitMs` (no starvation). The statement already running is not stopped;
 * - at most `maxBackground` of them run at once (0: no bound), first come first served: an ingestion
 *   batch and a maintenance round take turns instead of keeping two of the database's processes busy.
 *   One that has waited `maxSlotWaitMs` for its turn goes anyway: a statement holding the turn may be
 *   blocked by a lock of a transaction whose next statement waits for the turn, a wait Postgres cannot
 *   see (its deadlock detector only knows its own locks).
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
  readonly #maxBackground: number;
  readonly #maxSlotWaitMs: number;
  #inFlight = 0;
  #backgroundInFlight = 0;
  /**
   * Turns added to `maxBackground` for a while: ingestion's extra writers during a bulk load
   * (documents/service/ingest.ts), each with a turn of its own. Ignored when turns are unbounded.
   */
  extraTurns = 0;
  #lastEnded = Number.NEGATIVE_INFINITY;
  #waiters: Waiter[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(options: {
    lingerMs: number;
    maxWaitMs: number;
    maxBackground?: number;
    maxSlotWaitMs?: number;
  }) {
    this.#lingerMs = options.lingerMs;
    this.#maxWaitMs = options.maxWaitMs;
    this.#maxBackground = options.maxBackground ?? 0;
    this.#maxSlotWaitMs = options.maxSlotWaitMs ?? Number.POSITIVE_INFINITY;
  }

  /** Whether a request's statement runs, or ended less than the linger ago. */
  get busy(): boolean {
    return this.#inFlight > 0 || performance.now() - this.#lastEnded < this.#lingerMs;
  }

  /** Milliseconds since a request's statement last ended; 0 while one runs. */
  get requestsIdleMs(): number {
    return this.#inFlight > 0 ? 0 : performance.now() - this.#lastEnded;
  }

  /** Background statements running now (admitted and not yet settled). */
  get backgroundInFlight(): number {
    return this.#backgroundInFlight;
  }

  /** Runs a statement: a request's at once (counted), background work's when its turn comes. */
  async run<T>(statement: () => Promise<T>): Promise<T> {
    if (isInBackground()) {
      await this.#admitted();
      try {
        return await statement();
      } finally {
        this.#backgroundInFlight--;
        this.#pump();
      }
    }
    this.#inFlight++;
    try {
      return await statement();
    } finally {
      this.#inFlight--;
      this.#lastEnded = performance.now();
      this.#pump();
    }
  }

  /** Resolves once the statement may go; it then counts as in flight. */
  #admitted(): Promise<void> {
    if (!this.#waiters.length && this.#hasSlot() && (!this.busy || this.#maxWaitMs <= 0)) {
      this.#backgroundInFlight++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        impatient: this.#maxWaitMs <= 0,
        forced: false,
        go: resolve,
        deadline: undefined,
      };
      const slotDeadline = () => {
        if (this.#maxSlotWaitMs === Number.POSITIVE_INFINITY) return;
        waiter.deadline = setTimeout(
          () => {
            waiter.forced = true;
            this.#pump();
          },
          Math.max(0, this.#maxSlotWaitMs - this.#maxWaitMs),
        );
      };
      if (waiter.impatient) slotDeadline();
      else
        waiter.deadline = setTimeout(() => {
          waiter.impatient = true;
          slotDeadline();
          this.#pump();
        }, this.#maxWaitMs);
      this.#waiters.push(waiter);
      this.#pump();
    });
  }

  #hasSlot(): boolean {
    return this.#maxBackground <= 0 || this.#backgroundInFlight < this.#maxBackground + this.extraTurns;
  }

  /**
   * Lets waiting statements go, oldest first: while a turn is free, each one once no request's statement
   * runs (or it has waited long enough); one forced by its deadline at once. Otherwise, when only the
   * linger holds them back, looks again once it is over (a request's statement ending calls this again).
   */
  #pump(): void {
    const forced = this.#waiters.filter((w) => w.forced);
    if (forced.length) {
      this.#waiters = this.#waiters.filter((w) => !w.forced);
      for (const waiter of forced) this.#admit(waiter);
    }
    const busy = this.busy;
    while (this.#waiters.length && this.#hasSlot()) {
      const next = this.#waiters[0]!;
      if (busy && !next.impatient) break;
      this.#waiters.shift();
      this.#admit(next);
    }
    if (this.#timer || !this.#waiters.length || !this.#hasSlot() || this.#inFlight > 0) return;
    const left = this.#lingerMs - (performance.now() - this.#lastEnded);
    if (left <= 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#pump();
    }, left);
  }

  #admit(waiter: Waiter): void {
    clearTimeout(waiter.deadline);
    this.#backgroundInFlight++;
    waiter.go();
  }
}

interface Waiter {
  /** Has waited `maxWaitMs`: goes even while a request's statement runs. */
  impatient: boolean;
  /** Has waited `maxSlotWaitMs`: goes even when no turn is free. */
  forced: boolean;
  go(): void;
  deadline: NodeJS.Timeout | undefined;
}
