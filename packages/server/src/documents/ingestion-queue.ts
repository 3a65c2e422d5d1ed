/**
 * One request in the ingestion queue. The queue orders requests by document id; the payload is the
 * ingestion service's (`service/ingest.ts`), the only code that reads or writes the queue.
 */
export interface QueuedIngestion {
  /** Requests for one document id are written in the order they arrived. */
  readonly documentId: string;
}

/**
 * The ingestion queue of one application (in its deps): requests that arrive while batches are being
 * written form the next. `KAS_INGEST_WRITERS` batches may be in flight (PGlite runs them one after
 * the other anyway). Requests for one document id
 * are written in the order they arrived: an id waits while a batch holding it is in flight.
 */
export interface IngestionState {
  pending: QueuedIngestion[];
  inFlight: number;
  /** Document ids of the batches in flight. */
  busy: Set<string>;
  scheduled: boolean;
  /**
   * Requests being prepared (chunked, large ones in the CPU pool), by the document id they name: a
   * later request for that id joins the queue only after the earlier one did, whichever is ready first.
   */
  preparing: Map<string, Promise<unknown>>;
  /** The system ingestion CC pair never changes once seeded: looked up once. */
  systemPairId: Promise<number | undefined> | undefined;
  /**
   * Chunks waiting for their tsvectors from the text thread (`vectorise` in service/ingest.ts), and
   * whether a statement computes some now (the next ones gather meanwhile); `vectorised` counts the
   * chunks it gave vectors so far.
   */
  vectors: { waiting: { chunks: VectorisedChunk[]; done(): void }[]; running: boolean; vectorised: number };
}

/** What the text thread reads of a chunk, and where it puts the chunk's vector. */
export interface VectorisedChunk {
  title: string;
  content: string;
  vector?: string;
}

export function createIngestionState(): IngestionState {
  return {
    pending: [],
    inFlight: 0,
    busy: new Set(),
    scheduled: false,
    preparing: new Map(),
    systemPairId: undefined,
    vectors: { waiting: [], running: false, vectorised: 0 },
  };
}
