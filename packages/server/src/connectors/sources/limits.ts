import { RateLimitedError, SourceError } from './source.ts';

/**
 * The run must send no request to `service` before `until` (a provider's rate limit or the pair's
 * request budget): the attempt keeps its checkpoint and resumes then (`RateLimitedError`). `until`
 * null: the provider named no time, the scheduler's backoff applies.
 */
export function rateLimitedUntil(service: string, until: Date | null, reason: string): SourceError {
  const message = `${service} ${reason}`;
  return until ? new RateLimitedError(until.getTime(), message) : new SourceError('rate_limited', message);
}
