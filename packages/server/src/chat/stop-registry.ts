/** The sessions among `sessionIds` whose stop was requested, with when (`chat_sessions.stop_requested_at`). */
export type FindStopRequests = (
  sessionIds: string[],
) => Promise<{ id: string; stop_requested_at: Date | string | null }[]>;

interface ActiveRun {
  sessionId: string;
  /** Database time the turn began; a stop requested before it belongs to an earlier turn. */
  startedAt: Date;
  controller: AbortController;
}

const POLL_MS = 50;

/** The abort reason of a generation stopped because the server shuts down (not by its user). */
export const SHUTDOWN_STOP = 'shutdown';

/**
 * The generations running in this process (one registry per application, in its deps). A stop is a
 * timestamp on the session row, so it reaches the process that generates wherever it was requested:
 * with a shared database (given `findStopRequests`), one poll every 50 ms covers all active runs. A stop requested in this
 * process aborts at once — on the embedded database, which one process owns, that is every stop, so it
 * does not poll (a poll would also queue behind, and delay, the turn's own statements).
 */
export class StopRegistry {
  private readonly runs = new Set<ActiveRun>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  /** Null: this process owns the database, every stop is requested here (no polling). */
  private readonly findStopRequests: FindStopRequests | null;

  constructor(findStopRequests: FindStopRequests | null) {
    this.findStopRequests = findStopRequests;
  }

  register(sessionId: string, startedAt: Date): { signal: AbortSignal; release(): void } {
    const run: ActiveRun = { sessionId, startedAt, controller: new AbortController() };
    this.runs.add(run);
    if (this.findStopRequests) this.timer ??= setInterval(() => void this.poll(), POLL_MS).unref();
    return {
      signal: run.controller.signal,
      release: () => {
        this.runs.delete(run);
        if (this.runs.size === 0 && this.timer) {
          clearInterval(this.timer);
          this.timer = undefined;
        }
      },
    };
  }

  /**
   * Shutdown: every generation in this process stops, saving its partial answer and ending its stream;
   * its signal's reason is `SHUTDOWN_STOP`, so the answer is not said to be stopped by its user.
   */
  stopAll(): void {
    for (const run of this.runs) run.controller.abort(SHUTDOWN_STOP);
  }

  /** Resolves once no generation runs in this process, or after `timeoutMs`; true when none runs. */
  async whenIdle(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.runs.size > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, deadline - Date.now())));
    return this.runs.size === 0;
  }

  stopLocal(sessionId: string): void {
    for (const run of this.runs) if (run.sessionId === sessionId) run.controller.abort();
  }

  private async poll(): Promise<void> {
    if (this.polling || this.runs.size === 0 || !this.findStopRequests) return;
    this.polling = true;
    try {
      const ids = [...new Set([...this.runs].map((r) => r.sessionId))];
      const rows = await this.findStopRequests(ids);
      const requested = new Map(rows.map((r) => [r.id, r.stop_requested_at]));
      for (const run of this.runs) {
        const at = requested.get(run.sessionId);
        if (at && new Date(at).getTime() >= run.startedAt.getTime()) run.controller.abort();
      }
    } catch {
      // A closed or busy database: try again on the next tick.
    } finally {
      this.polling = false;
    }
  }
}
