import { OutboundError, type OutboundLimits, retryAfterMs } from '../../outbound/outbound.ts';
import { rateLimitedUntil } from './limits.ts';
import { SourceError, type SourceRunContext } from './source.ts';

/** The `next` URL of a `Link` header (RFC 8288), as GitHub and others paginate. */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(',')) {
    const match = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim());
    if (match?.[2]?.split(/\s+/).includes('next')) return match[1] as string;
  }
  return null;
}

/**
 * A JSON GET against a source's API through the outbound guard. 401 → `auth`, 429 (after the guard's own
 * retries) → `rate_limited` with its `Retry-After`, 404 and 410 (and `nullStatuses`) → null; other
 * failures → `transient`.
 */
export async function getJson<T>(
  args: Pick<SourceRunContext<unknown, unknown>, 'fetch' | 'signal'>,
  url: string,
  options: {
    headers: Record<string, string>;
    service: string;
    /** Extra refusal check (e.g. GitHub's 403 with an exhausted rate limit). */
    rateLimited?: (response: Response) => boolean;
    /**
     * Sees every response first (a source's own rate-limit headers and refusals): an error it returns
     * is thrown, the body left unread.
     */
    inspect?: (response: Response) => Promise<SourceError | null>;
    /** Statuses answered with null besides 404 and 410 (GitHub's 409 for an empty repository's tree). */
    nullStatuses?: readonly number[];
    /** Limits of the outbound client for these requests (a source that retries by its own rules sets `retries: 0`). */
    outbound?: Partial<OutboundLimits>;
  },
): Promise<{ data: T; response: Response } | null> {
  let response: Response;
  try {
    response = await args.fetch(url, {
      headers: options.headers,
      signal: args.signal,
      ...(options.outbound ? { outbound: options.outbound } : {}),
    });
  } catch (error) {
    if (args.signal.aborted) throw error;
    if (error instanceof OutboundError && error.code === 'BLOCKED_ADDRESS')
      throw new SourceError('config', error.message);
    throw new SourceError(
      'transient',
      `${options.service} could not be reached: ${(error as Error).message}`,
    );
  }
  const refused = await options.inspect?.(response);
  if (refused) {
    await response.body?.cancel().catch(() => {});
    throw refused;
  }
  if (response.status === 429 || options.rateLimited?.(response)) {
    await response.body?.cancel();
    const wait = retryAfterMs(response.headers.get('retry-after'));
    throw rateLimitedUntil(
      options.service,
      wait === null ? null : new Date(Date.now() + wait),
      `is rate limiting requests (${response.status})`,
    );
  }
  if (response.status === 401) {
    await response.body?.cancel();
    throw new SourceError('auth', `${options.service} refused the credential (401): check the token`);
  }
  if (response.status === 403) {
    await response.body?.cancel();
    throw new SourceError('auth', `${options.service} denied access (403): the token lacks a permission`);
  }
  if (response.status === 404 || response.status === 410 || options.nullStatuses?.includes(response.status)) {
    await response.body?.cancel();
    return null;
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new SourceError('transient', `${options.service} answered ${response.status}`, {
      retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
    });
  }
  try {
    return { data: (await response.json()) as T, response };
  } catch (error) {
    if (args.signal.aborted) throw error;
    throw new SourceError('transient', `${options.service} sent an unreadable answer`);
  }
}
