import { SourceError } from './source.ts';

/**
 * The run must send no request to `service` before `until` (a provider's rate limit or the pair's
 * request budget): the attempt ends rate limited and is retried from its checkpoint then. `until`
 * null: the provider named no time, the scheduler's backoff applies.
 */
export function rateLimitedUntil(service: string, until: Date | null, reason: string): SourceError {
  return new SourceError('rate_limited', `${service} ${reason}`, {
    retryAfterMs: until ? Math.max(0, until.getTime() - Date.now()) : null,
  });
}
