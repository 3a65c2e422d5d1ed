/** Per-process state of the connector worker, created with the app. */
export interface IndexingState {
  workerId: string;
  /** Attempts this process runs, by attempt id. */
  running: Map<number, { pairId: number; controller: AbortController }>;
  ticking: boolean;
  /** A pass over queued webhook events is running in this process. */
  eventsBusy: boolean;
  /** When this process last forgot old processed events (ms since epoch). */
  eventsPurgedAt: number;
}

export function createIndexingState(workerId: string): IndexingState {
  return { workerId, running: new Map(), ticking: false, eventsBusy: false, eventsPurgedAt: 0 };
}
