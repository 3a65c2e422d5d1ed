import pg from 'pg';
import { isLockNotAvailable, isTransientConflict } from './sql-errors.ts';

/** How often the primary's position and each replica's replay position are read. */
export const REPLICA_CHECK_MS = 250;
/** Primary positions kept to tell a replica's lag in time (enough for the largest bound). */
const MAX_SAMPLES = 2_400;
/**
 * How long a read on a replica waits for a lock replay holds (`lock_timeout` on its connections) before
 * the primary serves it. Replay takes a table's exclusive lock when the primary did (DDL, `LOCK TABLE`,
 * vacuum cutting a table's empty tail) and holds it until it replays that transaction's end: a wait
 * longer than this means replay is behind or paused (`pg_wal_replay_pause`, `recovery_min_apply_delay`),
 * and it would last until replay moves on, however long.
 */
export const REPLICA_LOCK_WAIT_MS = 1_000;
/** A replica that does not answer a check (or a new connection) within this long is marked down. */
export const REPLICA_CHECK_TIMEOUT_MS = 5_000;
/** node-postgres reads `query_timeout` from a query's config too (its types name it for clients only). */
const CHECK_TIMEOUT = { query_timeout: REPLICA_CHECK_TIMEOUT_MS } as Partial<pg.QueryConfig>;
/** The channel the access triggers of migration 0025 notify on the primary. */
export const ACCESS_CHANNEL = 'kas_access';
/** The access epoch: how many access changes have begun (counted before their commit). */
const EPOCH_SQL = `(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM kas_access_epoch)::text`;

/** A write-ahead-log position (`pg_lsn`, `X/Y` hexadecimal) as a comparable number. */
export function lsnValue(lsn: string): bigint {
  const [high = '0', low = '0'] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** Longest WAL page header (the first page of a segment); an idle insert position sits just past one. */
const LONG_PAGE_HEADER = 40n;

/**
 * The position a replica must replay to have everything the primary has committed so far: the insert
 * position (with asynchronous commit a commit record may not be written out yet, and the written
 * position would say a replica that lacks it is caught up) — except when nothing is pending and the
 * insert position only sits past the header of an empty new page, which no record will fill until the
 * next write: then the written position.
 */
function primaryPosition(row: { i: string; w: string; b: number }): bigint {
  const insert = lsnValue(row.i);
  const written = lsnValue(row.w);
  const atPageStart = written % BigInt(row.b) === 0n && insert - written <= LONG_PAGE_HEADER;
  return atPageStart ? written : insert;
}

export interface ReplicaStatus {
  url: string;
  /** Answered the last check. */
  up: boolean;
  /** Last replay position read (null before the first answer). */
  replayLsn: string | null;
  /** Usable for reads now: up, within the lag bound, and replayed past the last access change. */
  usable: boolean;
}

export interface ReadRouterOptions {
  primary: pg.Pool;
  /** The primary's URL, for the connection that listens for access changes. */
  primaryUrl: string;
  replicaUrls: string[];
  /** A replica further behind the primary than this (ms) is skipped. */
  maxLagMs: number;
  poolSize: number;
  /** Prepares each new pooled connection (named statements), as for the primary. */
  onPool?: (pool: pg.Pool) => void;
  /** A replica was skipped or taken back (logged once per change of state). */
  onChange?: (event: { url: string; usable: boolean; reason: string }) => void;
  checkMs?: number;
}

interface Replica {
  url: string;
  pool: pg.Pool;
  up: boolean;
  replay: bigint | null;
  usable: boolean;
  reason: string;
}

/** Why a replica's statement failed, when the primary may answer it instead; null for a statement's own error. */
function replicaFailure(error: unknown): 'replay' | 'connection' | null {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return 'connection';
  // A lock replay holds (lock_timeout), or replay cancelling the read (a conflict with recovery).
  if (isLockNotAvailable(error) || isTransientConflict(error)) return 'replay';
  // The session ended (57P01 admin shutdown or a conflict with recovery, 57P02 crash, 57P03 starting
  // up, 57P04 database dropped, 57P05 idle timeout) or the network failed. Not 57014: a cancelled statement.
  if (/^57P0[1-5]$/.test(code) || code.startsWith('08')) return 'connection';
  return null;
}

/** The URL without its password, for logs. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://…';
  }
}

/**
 * Routes read-only statements to Postgres streaming replicas, through one object shaped like a
 * `pg.Pool` (what Kysely's dialect takes), so repositories receive a read handle and never choose a
 * connection. Each connection is taken from a replica that, at its last check, answered, was at most
 * `maxLagMs` behind the primary, and had replayed past the primary's position at the last access
 * change (a permission, a membership, a document's access: migration 0025's triggers count it in
 * `kas_access_epoch` and notify at commit; the listener reads the primary's position after that commit).
 * Before each replica read the epoch is read on the primary: a change whose notification has not
 * arrived yet sends the read to the primary. While the listener is not connected nothing is known of
 * access changes: every read goes to the primary.
 */
export class ReadRouter {
  readonly #options: ReadRouterOptions;
  readonly #replicas: Replica[];
  /** Primary positions over time: a replica's lag is how long ago the primary was where it is. */
  #samples: { at: number; lsn: bigint }[] = [];
  /** The primary's position after the last access change seen (every replica must be past it). */
  #accessLsn: bigint | null = null;
  /** The access epoch (migration 0025's sequence) when `#accessLsn` was read. */
  #placedEpoch: string | null = null;
  #listener: pg.Client | null = null;
  #listening = false;
  #timer: NodeJS.Timeout | null = null;
  #checking: Promise<void> | null = null;
  #checkAgain = false;
  #closed = false;
  #next = 0;
  /** An access change was notified since the last read of the primary's position. */
  #noticed = false;
  /** When the last access change was heard (replicas behind it are checked again soon). */
  #noticedAt = 0;

  constructor(options: ReadRouterOptions) {
    this.#options = options;
    this.#replicas = options.replicaUrls.map((url) => {
      const pool = new pg.Pool({
        connectionString: url,
        max: options.poolSize,
        lock_timeout: REPLICA_LOCK_WAIT_MS,
        connectionTimeoutMillis: REPLICA_CHECK_TIMEOUT_MS,
      });
      // A replica going away must not crash the process: the next check marks it down.
      pool.on('error', () => {});
      options.onPool?.(pool);
      const replica: Replica = {
        url,
        pool,
        up: false,
        replay: null,
        usable: false,
        reason: 'not checked yet',
      };
      pool.on('connect', (client) => this.#fallBackToPrimary(replica, client));
      return replica;
    });
  }

  /** Connects the access listener and checks every replica once. */
  async start(): Promise<void> {
    await this.#listen();
    // Listening checks once it is connected (a replica that never answers costs one check's timeout).
    if (!this.#listening) await this.check();
    this.#schedule();
  }

  #schedule() {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.check().finally(() => this.#schedule());
    }, this.#options.checkMs ?? REPLICA_CHECK_MS);
    this.#timer.unref();
  }

  /**
   * A statement the replica cannot answer — it waited too long for replay's lock, replay cancelled it,
   * or the connection died — runs again on the primary, so a read never fails or hangs because of a
   * replica. Safe because the read handle runs single read-only statements, never a transaction.
   */
  #fallBackToPrimary(replica: Replica, client: pg.PoolClient) {
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      // Only the promise form (Kysely's); a callback or a cursor goes as it is.
      if (typeof args[0] !== 'string' || args.length > 2 || typeof args[1] === 'function')
        return query(...args);
      return query(...args).catch((error: unknown) => {
        const failure = replicaFailure(error);
        if (!failure) throw error;
        if (failure === 'connection') {
          replica.up = false;
          replica.reason = `unreachable (${(error as Error).message})`;
          this.#reclassify();
          void this.check();
        }
        return this.#options.primary.query(...(args as [string, unknown[]]));
      });
    };
  }

  async #listen(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.#options.primaryUrl,
      application_name: 'kas-read-router',
    });
    this.#listener = client;
    const lost = () => {
      if (this.#listener !== client) return;
      this.#listener = null;
      this.#listening = false;
      this.#reclassify();
      if (!this.#closed) setTimeout(() => void this.#listen(), 1000).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => {
      // No replica serves until the primary's position after this change is known.
      this.#noticed = true;
      this.#noticedAt = Date.now();
      this.#reclassify();
      void this.check();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${ACCESS_CHANNEL}`);
      this.#listening = true;
      // Changes made before LISTEN were not heard: every replica must reach the position of now.
      this.#accessLsn = null;
      await this.check();
    } catch {
      lost();
      await client.end().catch(() => {});
    }
  }

  /**
   * Reads the primary's position, then each replica's replay position. Called on a timer and on every
   * access change (a change arriving during a check runs one more, so its position is read after it).
   */
  check(): Promise<void> {
    if (this.#checking) {
      this.#checkAgain = true;
      return this.#checking;
    }
    this.#checking = (async () => {
      do {
        this.#checkAgain = false;
        await this.#checkOnce();
      } while (this.#checkAgain && !this.#closed);
    })().finally(() => {
      this.#checking = null;
    });
    return this.#checking;
  }

  async #checkOnce(): Promise<void> {
    const listening = this.#listening;
    const noticed = this.#noticed;
    this.#noticed = false;
    try {
      const { rows } = await this.#options.primary.query<{ i: string; w: string; b: number; e: string }>({
        text: `SELECT pg_current_wal_insert_lsn()::text AS i, pg_current_wal_lsn()::text AS w,
          current_setting('wal_block_size')::int AS b, ${EPOCH_SQL} AS e`,
        ...CHECK_TIMEOUT,
      });
      const lsn = primaryPosition(rows[0]!);
      const epoch = rows[0]!.e;
      this.#samples.push({ at: Date.now(), lsn });
      if (this.#samples.length > MAX_SAMPLES) this.#samples.splice(0, this.#samples.length - MAX_SAMPLES);
      // Read after the notification's commit: at or past the change's commit record. The insert
      // position, not the written one: with asynchronous commit the record may not be written out yet.
      if (listening && (noticed || this.#accessLsn === null)) {
        this.#accessLsn = lsn;
        this.#placedEpoch = epoch;
      }
    } catch {
      // The primary is unreachable: reads fail over to it anyway. A change heard but not placed is
      // placed at the next successful read.
      if (noticed) this.#noticed = true;
    }
    await Promise.all(
      this.#replicas.map(async (replica) => {
        try {
          const { rows } = await replica.pool.query<{ lsn: string | null }>({
            text: 'SELECT pg_last_wal_replay_lsn()::text AS lsn',
            ...CHECK_TIMEOUT,
          });
          replica.up = rows[0]?.lsn != null;
          replica.replay = rows[0]?.lsn ? lsnValue(rows[0].lsn) : null;
          if (!replica.up) replica.reason = 'not a streaming replica (no replay position)';
        } catch (error) {
          replica.up = false;
          replica.reason = `unreachable (${(error as Error).message})`;
        }
      }),
    );
    this.#reclassify();
    // Just after an access change, a replica that is up but has not replayed it yet is looked at again
    // soon rather than at the next tick (streaming replicas replay within milliseconds).
    const behind = this.#replicas.some(
      (r) => r.up && r.replay !== null && this.#accessLsn !== null && r.replay < this.#accessLsn,
    );
    if (behind && Date.now() - this.#noticedAt < 2_000 && !this.#closed)
      setTimeout(() => void this.check(), 20).unref();
  }

  #reclassify() {
    const now = Date.now();
    // The primary's position `maxLagMs` ago: a replica past it is at most that far behind.
    let bound: bigint | null = null;
    for (const sample of this.#samples) if (sample.at <= now - this.#options.maxLagMs) bound = sample.lsn;
    if (bound === null) bound = this.#samples[0]?.lsn ?? null;
    for (const replica of this.#replicas) {
      let usable = false;
      let reason = replica.reason;
      if (!replica.up || replica.replay === null) usable = false;
      else if (!this.#listening || this.#accessLsn === null) reason = 'access changes are not being heard';
      else if (this.#noticed) reason = 'an access change was just made';
      else if (replica.replay < this.#accessLsn) reason = 'not yet replayed the last access change';
      else if (bound !== null && replica.replay < bound)
        reason = `more than ${this.#options.maxLagMs} ms behind the primary`;
      else usable = true;
      if (usable !== replica.usable)
        this.#options.onChange?.({ url: redact(replica.url), usable, reason: usable ? 'caught up' : reason });
      replica.usable = usable;
      replica.reason = reason;
    }
  }

  status(): ReplicaStatus[] {
    return this.#replicas.map((r) => ({
      url: redact(r.url),
      up: r.up,
      replayLsn:
        r.replay === null
          ? null
          : `${(r.replay >> 32n).toString(16)}/${(r.replay & 0xffffffffn).toString(16)}`,
      usable: r.usable,
    }));
  }

  /**
   * The pool Kysely's read handle uses: each connection from the next usable replica (round robin),
   * else the primary; a replica that refuses a connection is marked down and the primary serves.
   */
  pool(): pg.Pool {
    const connect = async () => {
      let usable = this.#replicas.filter((r) => r.usable);
      // The epoch these replicas were judged at: a check placing a newer change while the epoch is
      // read below must not make them look current (two reads at once: the first's check placed
      // the change, and the second took a replica behind it).
      const placed = this.#placedEpoch;
      if (usable.length) {
        // A change whose notification has not arrived yet (it commits as the read starts) is seen
        // here: its epoch was taken before its commit. One short statement on the primary per read.
        const { rows } = await this.#options.primary.query<{ e: string }>(`SELECT ${EPOCH_SQL} AS e`);
        if (rows[0]!.e !== placed) {
          this.#noticed = true;
          this.#noticedAt = Date.now();
          this.#reclassify();
          void this.check();
          usable = [];
        }
      }
      for (let i = 0; i < usable.length; i++) {
        const replica = usable[(this.#next++ + i) % usable.length]!;
        try {
          return await replica.pool.connect();
        } catch (error) {
          replica.up = false;
          replica.reason = `unreachable (${(error as Error).message})`;
          this.#reclassify();
        }
      }
      return this.#options.primary.connect();
    };
    // Kysely's PostgresDialect calls only connect() (and end() on destroy).
    return { connect, end: async () => {} } as unknown as pg.Pool;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#checking;
    const listener = this.#listener;
    this.#listener = null;
    await listener?.end().catch(() => {});
    await Promise.all(this.#replicas.map((r) => r.pool.end().catch(() => {})));
  }
}
