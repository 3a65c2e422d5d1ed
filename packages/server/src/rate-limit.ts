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
 * Requests per API key per minute: in memory for the embedded single process, in Postgres when several
 * processes share one database so the limit holds across them. `limit` 0 disables it.
 */
export function createRateLimiter(options: { limit: number; pool?: pg.Pool }): RateLimiter {
  const { limit } = options;
  if (limit === 0) return { limit, consume: async () => ({}) };
  const store = createStore({ points: limit, pool: options.pool });
  return {
    limit,
    async consume(key) {
      try {
        return headersFor(limit, await store.consume(key));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
        throw new AppError(
          'RATE_LIMITED',
          `Rate limit of ${limit} requests per minute exceeded; retry in ${retryAfter} s`,
          {
            headers: { ...headersFor(limit, rejection), 'Retry-After': retryAfter },
          },
        );
      }
    },
  };
}

/** Failed authentications per client address: past the limit, the address is refused until the window ends. */
export interface AuthFailureLimiter {
  /** Throws 429 RATE_LIMITED while `address` has failed too often. */
  assertAllowed(address: string | undefined): Promise<void>;
  /** Counts one failed authentication from `address`. */
  record(address: string | undefined): Promise<void>;
}

export function createAuthFailureLimiter(options: { limit: number; pool?: pg.Pool }): AuthFailureLimiter {
  const { limit } = options;
  if (limit === 0) return { assertAllowed: async () => {}, record: async () => {} };
  const store = createStore({ points: limit, pool: options.pool, keyPrefix: 'authfail' });
  return {
    async assertAllowed(address) {
      if (!address) return;
      const state = await store.get(address);
      if (!state || state.consumedPoints < limit) return;
      const retryAfter = String(Math.max(1, Math.ceil(state.msBeforeNext / 1000)));
      throw new AppError(
        'RATE_LIMITED',
        `Too many failed authentications from this address; retry in ${retryAfter} s`,
        { headers: { 'Retry-After': retryAfter } },
      );
    },
    async record(address) {
      if (!address) return;
      await store.consume(address).catch((rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
      });
    },
  };
}
