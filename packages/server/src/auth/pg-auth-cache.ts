import pg from 'pg';
import type { Db } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import { AuthCache } from './auth-cache.ts';
import * as authSync from './auth-sync.repository.ts';

/** How long a write waits for every listener's acknowledgement before terminating the laggards' connections. */
export const ACK_TIMEOUT_MS = 3_000;
/** A heartbeat is sent this often on the listener connection. */
const HEARTBEAT_MS = 250;
/** The cache is served only while a heartbeat sent less than this long ago has been answered. */
const FRESHNESS_MS = 1_000;
const ACK_POLL_MS = 2;
const MAX_BACKOFF_MS = 5_000;

export interface PgAuthCacheOptions {
  connectionString: string;
  db: Db;
  logger: Logger;
  /** Another process saw `address` exceed the failed-authentication limit until `until` (epoch ms). */
  onBlock?: (address: string, until: number) => void;
  /** Loads the blocks that are current when the listener (re)connects. */
  failureLimit?: number;
}

/**
 * The auth cache on a shared Postgres. Each process keeps a dedicated connection that LISTENs on
 * `kas_auth`; a write commits, publishes a new epoch and waits until every live listener (found in
 * `pg_stat_activity` by its `application_name`) has cleared its cache and acknowledged that epoch, so the
 * very next request in any process reads the new state. A listener that does not acknowledge within
 * `ACK_TIMEOUT_MS` has its connection terminated, which disables its cache.
 *
 * The cache is served only while the listener is connected and a heartbeat *sent* less than
 * `FRESHNESS_MS` ago has been answered: a process frozen longer than the writer's timeout finds its cache
 * disabled when it wakes, before it could read a notification it missed. On any listener error the cache
 * is cleared and disabled until LISTEN succeeds again (with backoff), then cleared again.
 */
export class PgAuthCache extends AuthCache {
  readonly #options: PgAuthCacheOptions;
  #client: pg.Client | null = null;
  #listening = false;
  #freshUntil = 0;
  #epoch = 0;
  #acking: Promise<void> | null = null;
  #ackAgain = false;
  #heartbeat: NodeJS.Timeout | null = null;
  #reconnect: NodeJS.Timeout | null = null;
  #backoff = 100;
  #closed = false;

  constructor(options: PgAuthCacheOptions) {
    super();
    this.#options = options;
  }

  override usable(): boolean {
    return this.#listening && Date.now() < this.#freshUntil;
  }

  /** Connects the listener; resolves once it is listening (or has failed once and is retrying). */
  async start(): Promise<void> {
    await this.#connect();
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      application_name: 'kas-auth-listener-starting',
    });
    this.#client = client;
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, undefined));
    client.on('notification', (message) => this.#notified(client, message));
    try {
      await client.connect();
      const epoch = await authSync.listen(client);
      const failureLimit = this.#options.failureLimit;
      if (failureLimit && this.#options.onBlock)
        for (const block of await authSync.blockedAddresses(client, failureLimit))
          this.#options.onBlock(block.address, block.until);
      // Everything committed before `epoch` was published is visible from here: clear, then acknowledge.
      this.clear();
      this.#epoch = Math.max(this.#epoch, epoch);
      await authSync.acknowledge(client, this.#epoch);
      if (this.#client !== client) return;
      this.#backoff = 100;
      const sentAt = Date.now();
      await authSync.heartbeat(client);
      this.#freshUntil = sentAt + FRESHNESS_MS;
      this.#listening = true;
      this.#heartbeat = setInterval(() => this.#beat(client), HEARTBEAT_MS);
      this.#heartbeat.unref();
    } catch (error) {
      this.#lost(client, error);
    }
  }

  #beat(client: pg.Client): void {
    const sentAt = Date.now();
    authSync.heartbeat(client).then(
      () => {
        if (this.#client === client) this.#freshUntil = Math.max(this.#freshUntil, sentAt + FRESHNESS_MS);
      },
      (error: unknown) => this.#lost(client, error),
    );
  }

  #notified(client: pg.Client, message: pg.Notification): void {
    if (this.#client !== client) return;
    if (message.channel === authSync.BLOCK_CHANNEL) {
      const space = message.payload?.indexOf(' ') ?? -1;
      if (space > 0)
        this.#options.onBlock?.(message.payload!.slice(space + 1), Number(message.payload!.slice(0, space)));
      return;
    }
    this.clear();
    this.#epoch = Math.max(this.#epoch, Number(message.payload) || 0);
    this.#acknowledge(client);
  }

  /** One acknowledgement in flight at a time; a newer epoch arriving meanwhile is acknowledged after it. */
  #acknowledge(client: pg.Client): void {
    if (this.#acking) {
      this.#ackAgain = true;
      return;
    }
    this.#acking = authSync.acknowledge(client, this.#epoch).then(
      () => {
        this.#acking = null;
        if (this.#ackAgain) {
          this.#ackAgain = false;
          this.#acknowledge(client);
        }
      },
      (error: unknown) => {
        this.#acking = null;
        this.#lost(client, error);
      },
    );
  }

  #lost(client: pg.Client, error: unknown): void {
    if (this.#client !== client) return;
    this.#client = null;
    this.#listening = false;
    this.#freshUntil = 0;
    this.clear();
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    client.end().catch(() => {});
    if (this.#closed) return;
    this.#options.logger.warn(
      { err: error },
      'auth cache listener lost; serving from the database until it reconnects',
    );
    const delay = this.#backoff;
    this.#backoff = Math.min(MAX_BACKOFF_MS, this.#backoff * 2);
    this.#reconnect = setTimeout(() => {
      this.#reconnect = null;
      void this.#connect();
    }, delay);
    this.#reconnect.unref();
  }

  /**
   * Clears here, publishes a new epoch and waits until every live listener has acknowledged it; listeners
   * still behind after `ACK_TIMEOUT_MS` have their connections terminated (their caches then switch off).
   */
  override async invalidate(): Promise<void> {
    this.clear();
    const { db } = this.#options;
    const epoch = await authSync.publishEpoch(db);
    const deadline = Date.now() + ACK_TIMEOUT_MS;
    for (;;) {
      const behind = (await authSync.listeners(db)).filter((listener) => listener.epoch < epoch);
      if (!behind.length) return;
      if (Date.now() >= deadline) {
        this.#options.logger.warn(
          { pids: behind.map((listener) => listener.pid) },
          'auth cache listeners did not acknowledge an invalidation in time; terminating their connections',
        );
        await authSync.terminate(
          db,
          behind.map((listener) => listener.pid),
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, ACK_POLL_MS));
    }
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#listening = false;
    this.clear();
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    if (this.#reconnect) clearTimeout(this.#reconnect);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }
}
