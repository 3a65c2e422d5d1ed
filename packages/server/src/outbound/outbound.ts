import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { type Config, parseAllowlist } from '../config.ts';
import { AddressGuard } from './address-guard.ts';

/** Why an outbound request was refused or cut short; `message` is safe to show to an API consumer. */
export type OutboundErrorCode =
  | 'BLOCKED_ADDRESS'
  | 'BAD_URL'
  | 'TIMEOUT'
  | 'TOO_LARGE'
  | 'TOO_MANY_REDIRECTS'
  | 'NETWORK'
  | 'ABORTED';

/** A refused or failed outbound request. A `TypeError` like `fetch`'s own network errors, so fetch callers handle it. */
export class OutboundError extends TypeError {
  readonly code: OutboundErrorCode;
  constructor(code: OutboundErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboundError';
    this.code = code;
  }
}

/** Caps applied to one request; every field has a default from the configuration. */
export interface OutboundLimits {
  /** Longest wait for the response headers, and for each next piece of the body (ms). */
  timeoutMs: number;
  /** Longest time for the whole exchange including the body (ms); 0 = none (long-lived streams such as SSE). */
  totalTimeoutMs: number;
  /** Largest response body (bytes); a larger one fails with `TOO_LARGE`. */
  maxBytes: number;
  maxRedirects: number;
  /** Retries of idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE) after a network error, 429, 502, 503 or 504. */
  retries: number;
  /** First backoff (ms), doubled per retry with jitter; a `Retry-After` header replaces it. */
  retryBaseMs: number;
  /** A `Retry-After` longer than this is not waited for: the response is returned to the caller. */
  maxRetryAfterMs: number;
}

export interface OutboundOptions extends OutboundLimits {
  allowlist: readonly string[];
  /** Told of each request that fails for good (refused, unreachable, timed out; not aborted), for the log. */
  onFailure?: (failure: { method: string; url: string; error: OutboundError | Error }) => void;
}

/** `fetch` with the guard and the caps; `init.outbound` overrides limits for one call. */
export type OutboundFetch = (
  input: string | URL | Request,
  init?: RequestInit & { outbound?: Partial<OutboundLimits> },
) => Promise<Response>;

export interface Outbound {
  /** A drop-in `fetch` (pass it to SDKs that accept a custom fetch). */
  fetch: OutboundFetch;
  /** The same fetch with other default limits, e.g. `{ totalTimeoutMs: 0 }` for an event stream. */
  withLimits(limits: Partial<OutboundLimits>): OutboundFetch;
  readonly guard: AddressGuard;
}

export function outboundOptionsFrom(config: Config): OutboundOptions {
  return {
    allowlist: parseAllowlist(config.KAS_OUTBOUND_ALLOWLIST).entries,
    timeoutMs: config.KAS_OUTBOUND_TIMEOUT_MS,
    totalTimeoutMs: config.KAS_OUTBOUND_TOTAL_TIMEOUT_MS,
    maxBytes: config.KAS_OUTBOUND_MAX_BYTES,
    maxRedirects: 5,
    retries: config.KAS_OUTBOUND_RETRIES,
    retryBaseMs: 500,
    maxRetryAfterMs: MAX_SLEPT_RETRY_AFTER_MS,
  };
}

/**
 * The longest `Retry-After` the client sleeps through itself. A longer one (and a 429 that says the
 * quota is spent, `x-ratelimit-remaining: 0`) is answered to the caller at once: a connector source
 * turns it into a rate limit, and its attempt waits in the queue with the worker free meanwhile.
 */
export const MAX_SLEPT_RETRY_AFTER_MS = 5_000;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * The only request headers that follow a redirect to another origin (scheme, host and port). Every other
 * header may carry a credential the caller configured for the first origin (an action's `X-Api-Key`, an
 * MCP server's template headers, `Authorization`, `Cookie`, `Proxy-Authorization`) and is dropped.
 */
const CROSS_ORIGIN_SAFE_HEADERS = new Set([
  'accept',
  'accept-language',
  'cache-control',
  'content-language',
  'content-length',
  'content-type',
  'pragma',
  'user-agent',
]);

/** Milliseconds a `Retry-After` header asks for (delta-seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function sleep(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new OutboundError('ABORTED', 'The request was aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new OutboundError('ABORTED', 'The request was aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function blocked(host: string, address: string): OutboundError {
  return new OutboundError(
    'BLOCKED_ADDRESS',
    `Refused to connect to ${host} (${address}): private, loopback and link-local addresses are blocked unless KAS_OUTBOUND_ALLOWLIST allows them`,
  );
}

/** A DNS lookup that only answers with addresses the guard allows: the check happens after resolution, on the address actually dialled. */
function guardedLookup(guard: AddressGuard): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const allowed = addresses.filter((entry) => guard.allows(hostname, entry.address));
      const first = allowed[0];
      if (!first) return callback(blocked(hostname, addresses[0]?.address ?? 'no address'), '', 0);
      if ((options as { all?: boolean }).all) {
        (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      } else callback(null, first.address, first.family);
    });
  };
}

interface Prepared {
  method: string;
  headers: Headers;
  body: Buffer | null;
  signal: AbortSignal | null;
  redirect: RequestRedirect;
}

async function prepare(
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<{ url: URL } & Prepared> {
  let request: Request;
  try {
    request = new Request(input, init);
  } catch (error) {
    throw new OutboundError('BAD_URL', `Invalid request: ${(error as Error).message}`, { cause: error });
  }
  const url = new URL(request.url);
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : null;
  const headers = new Headers(request.headers);
  // The body is handed back undecoded; ask for it that way.
  headers.delete('accept-encoding');
  return {
    url,
    method: request.method.toUpperCase(),
    headers,
    body,
    signal: init?.signal ?? (input instanceof Request ? input.signal : null),
    redirect: init?.redirect ?? (input instanceof Request ? input.redirect : 'follow'),
  };
}

function sendOnce(
  guard: AddressGuard,
  url: URL,
  req: Prepared,
  limits: OutboundLimits,
  deadline: AbortSignal | null,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return reject(
        new OutboundError('BAD_URL', `Only http and https URLs can be fetched (got ${url.protocol})`),
      );
    }
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(hostname) && !guard.allows(hostname, hostname)) return reject(blocked(hostname, hostname));
    const headers: Record<string, string> = {};
    req.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (req.body) headers['content-length'] = String(req.body.length);
    if (!headers['user-agent']) headers['user-agent'] = 'kas-connector/1.0';
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const outgoing = send(url, { method: req.method, headers, lookup: guardedLookup(guard) });
    const timer = setTimeout(() => {
      outgoing.destroy(
        new OutboundError('TIMEOUT', `${url.host} did not answer within ${limits.timeoutMs} ms`),
      );
    }, limits.timeoutMs);
    const abort = () =>
      outgoing.destroy(
        deadline?.aborted && !req.signal?.aborted
          ? new OutboundError('TIMEOUT', `${url.host} took longer than ${limits.totalTimeoutMs} ms`)
          : new OutboundError('ABORTED', 'The request was aborted'),
      );
    req.signal?.addEventListener('abort', abort, { once: true });
    deadline?.addEventListener('abort', abort, { once: true });
    if (req.signal?.aborted || deadline?.aborted) abort();
    const cleanup = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', abort);
      deadline?.removeEventListener('abort', abort);
    };
    outgoing.on('response', (response) => {
      clearTimeout(timer);
      response.on('close', cleanup);
      resolve(response);
    });
    outgoing.on('error', (error) => {
      cleanup();
      reject(
        error instanceof OutboundError
          ? error
          : new OutboundError(
              'NETWORK',
              `Could not reach ${url.host}: ${(error as NodeJS.ErrnoException).code ?? error.message}`,
              {
                cause: error,
              },
            ),
      );
    });
    outgoing.end(req.body ?? undefined);
  });
}

/** Wraps the body in a web stream that enforces the size and idle caps. */
function capBody(response: IncomingMessage, url: URL, limits: OutboundLimits): ReadableStream<Uint8Array> {
  let received = 0;
  let idle: NodeJS.Timeout | undefined;
  const armIdle = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      response.destroy(
        new OutboundError('TIMEOUT', `${url.host} stopped sending for ${limits.timeoutMs} ms`),
      );
    }, limits.timeoutMs);
  };
  armIdle();
  response.on('data', (chunk: Buffer) => {
    received += chunk.length;
    armIdle();
    if (received > limits.maxBytes) {
      response.destroy(
        new OutboundError(
          'TOO_LARGE',
          `The response from ${url.host} is larger than ${limits.maxBytes} bytes`,
        ),
      );
    }
  });
  response.on('close', () => clearTimeout(idle));
  return Readable.toWeb(response) as ReadableStream<Uint8Array>;
}

function toResponse(
  incoming: IncomingMessage,
  url: URL,
  limits: OutboundLimits,
  redirected: boolean,
): Response {
  const length = Number(incoming.headers['content-length']);
  if (Number.isFinite(length) && length > limits.maxBytes) {
    incoming.destroy();
    throw new OutboundError(
      'TOO_LARGE',
      `The response from ${url.host} is larger than ${limits.maxBytes} bytes`,
    );
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const status = incoming.statusCode ?? 502;
  const nullBody = NULL_BODY_STATUSES.has(status) || status < 200;
  if (nullBody) incoming.resume();
  const response = new Response(nullBody ? null : capBody(incoming, url, limits), {
    status: status < 200 ? 502 : status,
    statusText: incoming.statusMessage ?? '',
    headers,
  });
  Object.defineProperty(response, 'url', { value: url.href });
  Object.defineProperty(response, 'redirected', { value: redirected });
  return response;
}

async function fetchFollowing(
  guard: AddressGuard,
  start: URL,
  req: Prepared,
  limits: OutboundLimits,
  deadline: AbortSignal | null,
): Promise<Response> {
  let url = start;
  let current = req;
  for (let hop = 0; ; hop++) {
    const incoming = await sendOnce(guard, url, current, limits, deadline);
    const status = incoming.statusCode ?? 0;
    const location = incoming.headers.location;
    if (status < 300 || status > 399 || !location || current.redirect === 'manual' || status === 304) {
      return toResponse(incoming, url, limits, hop > 0);
    }
    incoming.resume();
    if (current.redirect === 'error')
      throw new OutboundError('NETWORK', `${url.host} redirected and redirects are refused`);
    if (hop >= limits.maxRedirects) {
      throw new OutboundError(
        'TOO_MANY_REDIRECTS',
        `More than ${limits.maxRedirects} redirects from ${start.host}`,
      );
    }
    let next: URL;
    try {
      next = new URL(location, url);
    } catch (error) {
      throw new OutboundError('BAD_URL', `${url.host} redirected to an invalid URL`, { cause: error });
    }
    const headers = new Headers(current.headers);
    if (next.origin !== url.origin) {
      const names: string[] = [];
      headers.forEach((_value, name) => {
        names.push(name);
      });
      for (const name of names) if (!CROSS_ORIGIN_SAFE_HEADERS.has(name)) headers.delete(name);
    }
    const toGet = status === 303 || ((status === 301 || status === 302) && current.method === 'POST');
    if (toGet) {
      headers.delete('content-type');
      headers.delete('content-length');
    }
    current = {
      ...current,
      headers,
      method: toGet && current.method !== 'HEAD' ? 'GET' : current.method,
      body: toGet ? null : current.body,
    };
    url = next;
  }
}

/** Builds the one HTTP client for the outside world. */
export function createOutbound(options: OutboundOptions): Outbound {
  const guard = new AddressGuard(options.allowlist);
  const { allowlist: _allowlist, onFailure, ...defaults } = options;
  const withLimits = (overrides: Partial<OutboundLimits>): OutboundFetch => {
    const base = { ...defaults, ...overrides };
    return async (input, init) => {
      const limits = { ...base, ...init?.outbound };
      const prepared = await prepare(input, init);
      const deadline = limits.totalTimeoutMs > 0 ? AbortSignal.timeout(limits.totalTimeoutMs) : null;
      const retries = IDEMPOTENT.has(prepared.method) ? limits.retries : 0;
      for (let attempt = 0; ; attempt++) {
        let response: Response | null = null;
        try {
          response = await fetchFollowing(guard, prepared.url, prepared, limits, deadline);
        } catch (error) {
          const retryable =
            error instanceof OutboundError && (error.code === 'NETWORK' || error.code === 'TIMEOUT');
          if (!retryable || attempt >= retries || deadline?.aborted) {
            if (!(error instanceof OutboundError && error.code === 'ABORTED'))
              onFailure?.({ method: prepared.method, url: prepared.url.toString(), error: error as Error });
            throw error;
          }
        }
        if (response && (!RETRY_STATUSES.has(response.status) || attempt >= retries)) return response;
        const asked = response ? retryAfterMs(response.headers.get('retry-after')) : null;
        if (asked !== null && asked > limits.maxRetryAfterMs && response) return response;
        // A spent quota (GitHub's primary limit sends no Retry-After): more requests before the reset are refused, and
        // GitHub warns that sending them can get an integration banned.
        if (response?.headers.get('x-ratelimit-remaining') === '0') return response;
        await response?.body?.cancel();
        const backoff = limits.retryBaseMs * 2 ** attempt;
        await sleep(asked ?? backoff / 2 + Math.random() * (backoff / 2), prepared.signal);
      }
    };
  };
  return { fetch: withLimits({}), withLimits, guard };
}
