import { OutboundError, type OutboundFetch, retryAfterMs } from '../../outbound/outbound.ts';
import { rateLimitedUntil } from './limits.ts';
import { SourceError } from './source.ts';

/** What a source's API calls need: the guarded fetch and the run's abort signal. */
export interface RestContext {
  fetch: OutboundFetch;
  signal: AbortSignal;
}

/**
 * One request to a source's REST API through the outbound client (which already retries 429/5xx,
 * honouring `Retry-After`). Failures that end the run become `SourceError`s with a message safe to
 * show on the attempt; `404` (and the statuses in `returned`) are returned to the caller, who knows
 * what was missing or refused (a 403 may be a quota or one unreadable item, not the credential).
 */
export async function sourceRequest(
  ctx: RestContext,
  service: string,
  url: string,
  init: RequestInit = {},
  returned: readonly number[] = [],
): Promise<Response> {
  let response: Response;
  try {
    response = await ctx.fetch(url, { ...init, signal: ctx.signal });
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    if (error instanceof OutboundError) {
      throw new SourceError(
        error.code === 'BLOCKED_ADDRESS' ? 'config' : 'transient',
        `${service}: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    throw new SourceError('transient', `${service} could not be reached`, { cause: error });
  }
  if (response.ok || response.status === 404 || returned.includes(response.status)) return response;
  await response.body?.cancel().catch(() => {});
  if (response.status === 401 || response.status === 403) {
    throw new SourceError(
      'auth',
      `${service} refused the credential (${response.status}): check the credential's keys and its access`,
    );
  }
  if (response.status === 429 || response.status === 503) {
    const wait = retryAfterMs(response.headers.get('retry-after'));
    throw rateLimitedUntil(
      service,
      wait === null ? null : new Date(Date.now() + wait),
      `is rate limiting requests (${response.status})`,
    );
  }
  throw new SourceError('transient', `${service} answered ${response.status}`);
}

/** A JSON GET; `null` for 404. */
export async function getJson<T>(
  ctx: RestContext,
  service: string,
  url: string,
  headers: Record<string, string>,
): Promise<T | null> {
  const response = await sourceRequest(ctx, service, url, {
    headers: { accept: 'application/json', ...headers },
  });
  return jsonOrNull<T>(response, service);
}

/** A response's JSON body; `null` for 404 (its body discarded). */
export async function jsonOrNull<T>(response: Response, service: string): Promise<T | null> {
  if (response.status === 404) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  try {
    return (await response.json()) as T;
  } catch (error) {
    throw new SourceError('transient', `${service} sent a response that is not JSON`, { cause: error });
  }
}
