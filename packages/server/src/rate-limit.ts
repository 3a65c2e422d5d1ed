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

/**
 * Requests per API key per minute: in memory for the embedded single process, in Postgres when several
 * processes share one database so the limit holds across them. `limit` 0 disables it.
 */
export function createRateLimiter(options: { limit: number; pool?: pg.Pool }): RateLimiter {
  const { limit } = options;
  if (limit === 0) return { limit, consume: async () => ({}) };
  const store = options.pool
    ? new RateLimiterPostgres({
        storeClient: options.pool,
        storeType: 'pool',
        tableName: 'rate_limits',
        tableCreated: true,
        points: limit,
        duration: WINDOW_SECONDS,
      })
    : new RateLimiterMemory({ points: limit, duration: WINDOW_SECONDS });
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
