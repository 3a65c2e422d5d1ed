import type pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from './errors.ts';

export interface RateLimiter {
  readonly limit: number;
  /** Counts one request for `key`; returns headers to send, or throws 429 RATE_LIMITED. */
  consume(key: string): Promise<Record<string, string>>;
}

const WINDOW_SECONDS = 60;

function headersFor(limit: number, res: RateLimiterRes): Record<string, string> {
  return {
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
    'RateLimit-Reset': String(Math.ceil(res.msBeforeNext / 1000)),
  };
}

/** A one-minute window of `points`: in memory for the embedded process, in Postgres when processes share one. */
function createStore(options: { points: number; pool?: pg.Pool | undefined; keyPrefix?: string }) {
  const settings = {
    points: options.points,
    duration: WINDOW_SECONDS,
    ...(options.keyPrefix ? { keyPrefix: options.keyPrefix } : {}),
  };
  return options.pool
    ? new RateLimiterPostgres({
        storeClient: options.pool,
        storeType: 'pool',
        tableName: 'rate_limits',
        tableCreated: true,
        ...settings,
      })
    : new RateLimiterMemory(settings);
}

/**
 * How many points a process reserves from Postgres at once: a request is then served from the local
 * reservation without a statement, and the limit holds across processes exactly (points are counted in
 * Postgres when reserved), at the price that a process may hold up to one unused batch per key that others
 * cannot spend until the window ends. A fiftieth of the limit, at most 100 (a 600/min limit: 12).
 */
export function batchSizeFor(limit: number): number {
  return Math.max(1, Math.min(100, Math.floor(limit / 50)));
}

interface Reservation {
  /** Points reserved and not yet served. */
  left: number;
  /** Points the shared window had left after this reservation (for `RateLimit-Remaining`). */
  sharedLeft: number;
  /** When the shared window ends (epoch ms). */
  resetAt: number;
}

/**
 * Requests per API key per minute: in memory for the embedded single process, in Postgres when several
 * processes share one database so the limit holds across them. On Postgres each process reserves points
 * in batches (`batchSizeFor`) and serves them locally; `RateLimit-Remaining` is the shared window's
 * remainder at the last reservation plus what this process still holds, so it is exact for one process
 * and an upper bound with several. `limit` 0 disables it.
 */
export function createRateLimiter(options: { limit: number; pool?: pg.Pool }): RateLimiter {
  const { limit } = options;
  if (limit === 0) return { limit, consume: async () => ({}) };
  const store = createStore({ points: limit, pool: options.pool });
  const refuse = (msBeforeNext: number): AppError => {
    const retryAfter = String(Math.max(1, Math.ceil(msBeforeNext / 1000)));
    return new AppError(
      'RATE_LIMITED',
      `Rate limit of ${limit} requests per minute exceeded; retry in ${retryAfter} s`,
      {
        headers: {
          'RateLimit-Limit': String(limit),
          'RateLimit-Remaining': '0',
          'RateLimit-Reset': String(Math.ceil(msBeforeNext / 1000)),
          'Retry-After': retryAfter,
        },
      },
    );
  };
  if (!options.pool) {
    return {
      limit,
      async consume(key) {
        try {
          return headersFor(limit, await store.consume(key));
        } catch (rejection) {
          if (!(rejection instanceof RateLimiterRes)) throw rejection;
          throw refuse(rejection.msBeforeNext);
        }
      },
    };
  }
  const batch = batchSizeFor(limit);
  const reservations = new Map<string, Reservation>();
  const served = (reservation: Reservation, now: number): Record<string, string> => {
    reservation.left--;
    return {
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(Math.max(0, reservation.sharedLeft + reservation.left)),
      'RateLimit-Reset': String(Math.max(0, Math.ceil((reservation.resetAt - now) / 1000))),
    };
  };
  return {
    limit,
    async consume(key) {
      const now = Date.now();
      const held = reservations.get(key);
      if (held && now < held.resetAt) {
        if (held.left > 0) return served(held, now);
        // The shared window was spent when this process last asked: points are never given back, so it
        // stays spent until it ends; refuse without asking Postgres again.
        if (held.sharedLeft === 0) throw refuse(held.resetAt - now);
      }
      let res: RateLimiterRes;
      try {
        res = await store.consume(key, batch);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        // Over the limit with this batch: the points still free before it are ours (a partial batch).
        res = rejection;
      }
      if (reservations.size >= 10_000) reservations.clear();
      const before = res.consumedPoints - batch;
      const granted = Math.max(0, Math.min(batch, limit - before));
      if (granted === 0) {
        reservations.set(key, { left: 0, sharedLeft: 0, resetAt: now + res.msBeforeNext });
        throw refuse(res.msBeforeNext);
      }
      const reservation: Reservation = {
        left: granted,
        sharedLeft: Math.max(0, limit - res.consumedPoints),
        resetAt: now + res.msBeforeNext,
      };
      reservations.set(key, reservation);
      return served(reservation, now);
    },
  };
}

/**
 * Failed attempts per client address: past the limit, the address's failed attempts are answered 429
 * until the window ends (the callers ask only once an attempt failed, so a valid one is never refused).
 */
export interface AuthFailureLimiter {
  /**
   * Throws 429 RATE_LIMITED while `address` has failed too often: the blocks this process knows of (its
   * own, and those other processes announce on `kas_auth_block`, auth/pg-auth-cache.ts), then the store.
   */
  assertAllowed(address: string | undefined): Promise<void>;
  /** Counts one failed authentication from `address`. */
  record(address: string | undefined): Promise<void>;
  /** Another process announced that `address` is blocked until `until` (epoch ms). */
  noteBlocked(address: string, until: number): void;
}

export function createAuthFailureLimiter(options: {
  limit: number;
  pool?: pg.Pool;
  /** The store's key prefix: `authfail` (failed authentications, the default) or another count's own. */
  keyPrefix?: string;
  /** Announces a block to the other processes (Postgres). */
  announce?: (address: string, until: number) => Promise<void>;
}): AuthFailureLimiter {
  const { limit } = options;
  if (limit === 0) return { assertAllowed: async () => {}, record: async () => {}, noteBlocked: () => {} };
  const store = createStore({
    points: limit,
    pool: options.pool,
    keyPrefix: options.keyPrefix ?? 'authfail',
  });
  const blocked = new Map<string, number>();
  const refuse = (msBeforeNext: number): AppError => {
    const retryAfter = String(Math.max(1, Math.ceil(msBeforeNext / 1000)));
    return new AppError(
      'RATE_LIMITED',
      `Too many failed authentications from this address; retry in ${retryAfter} s`,
      { headers: { 'Retry-After': retryAfter } },
    );
  };
  const noteBlocked = (address: string, until: number) => {
    if (blocked.size >= 10_000) blocked.clear();
    if (until > (blocked.get(address) ?? 0)) blocked.set(address, until);
  };
  return {
    async assertAllowed(address) {
      if (!address) return;
      const until = blocked.get(address);
      if (until !== undefined) {
        if (until > Date.now()) throw refuse(until - Date.now());
        blocked.delete(address);
      }
      const state = await store.get(address);
      if (!state || state.consumedPoints < limit) return;
      throw refuse(state.msBeforeNext);
    },
    async record(address) {
      if (!address) return;
      const res = await store.consume(address).catch((rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return rejection;
      });
      if (res.consumedPoints === limit) {
        const until = Date.now() + res.msBeforeNext;
        noteBlocked(address, until);
        await options.announce?.(address, until);
      }
    },
    noteBlocked,
  };
}
