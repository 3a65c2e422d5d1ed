import { createHash } from 'node:crypto';
import { z } from 'zod';
import { OutboundError, retryAfterMs } from '../../outbound/outbound.ts';
import { type ExtractedPage, parseRobots, sitemapLocations } from './html.ts';
import {
  type JsonValue,
  type LoadArgs,
  type Source,
  type SourceBatch,
  type SourceDocument,
  type SourceDocumentFailure,
  SourceError,
  type SourceRunContext,
  unreadableReason,
  validateWith,
} from './source.ts';

const WebConfig = z.object({
  base_url: z
    .string()
    .min(1)
    .transform((v) => (/^https?:\/\//i.test(v) ? v : `https://${v}`))
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' })),
  web_connector_type: z.enum(['recursive', 'single', 'sitemap']).default('recursive'),
});
export type WebConfig = z.infer<typeof WebConfig>;

const BATCH_SIZE = 50;
const PARALLEL = 8;

interface Checkpoint {
  queue: string[];
  /** URLs already queued or fetched, as 8-byte hashes (base64, concatenated): a whole site's set in a few bytes per page. */
  seen?: string;
  /** Older checkpoints listed the URLs themselves. */
  visited?: string[];
  started: boolean;
  /** Pages read (indexed, failed or skipped) before this checkpoint: with the queue, the run's total. */
  done?: number;
}

/** The set of URLs a crawl has queued or fetched, held as 8-byte hashes (no URL strings kept). */
class SeenUrls {
  readonly #hashes = new Set<bigint>();

  static from(checkpoint: Checkpoint | null): SeenUrls {
    const seen = new SeenUrls();
    if (checkpoint?.seen) {
      const bytes = Buffer.from(checkpoint.seen, 'base64');
      for (let i = 0; i + 8 <= bytes.length; i += 8) seen.#hashes.add(bytes.readBigUInt64BE(i));
    }
    for (const url of checkpoint?.visited ?? []) seen.add(url);
    return seen;
  }

  static #hash(url: string): bigint {
    return createHash('sha256').update(url).digest().readBigUInt64BE(0);
  }

  has(url: string): boolean {
    return this.#hashes.has(SeenUrls.#hash(url));
  }

  add(url: string): void {
    this.#hashes.add(SeenUrls.#hash(url));
  }

  get size(): number {
    return this.#hashes.size;
  }

  encode(): string {
    const bytes = Buffer.allocUnsafe(this.#hashes.size * 8);
    let i = 0;
    for (const hash of this.#hashes) {
      bytes.writeBigUInt64BE(hash, i);
      i += 8;
    }
    return bytes.toString('base64');
  }
}

function normalise(raw: string, base: string): string | null {
  try {
    const url = new URL(raw, base);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    url.hash = '';
    return url.href;
  } catch {
    return null;
  }
}

const hostOf = (url: URL) => url.hostname.replace(/^www\./, '');

/** Same host (`www.` ignored) and under the base URL's path. */
function inScope(candidate: string, base: URL): boolean {
  const url = new URL(candidate);
  const basePath = base.pathname.endsWith('/') ? base.pathname : base.pathname.replace(/[^/]*$/, '');
  return hostOf(url) === hostOf(base) && url.pathname.startsWith(basePath);
}

type Fetched =
  | { kind: 'page'; doc: SourceDocument; links: string[]; finalUrl: string }
  | { kind: 'skip' }
  | { kind: 'failure'; failure: SourceDocumentFailure };

/** A page whose text could not be read (a limit, a damaged file): a per-document error of the attempt. */
function unreadablePage(args: { signal: AbortSignal }, finalUrl: string, error: unknown): Fetched {
  if (args.signal.aborted) throw error;
  return {
    kind: 'failure',
    failure: { document_id: finalUrl, link: finalUrl, message: `Unreadable page${unreadableReason(error)}` },
  };
}

async function fetchPage(args: LoadArgs<WebConfig, unknown>, url: string): Promise<Fetched> {
  let response: Response;
  try {
    response = await args.fetch(url, {
      signal: args.signal,
      headers: { accept: 'text/html,application/pdf;q=0.9,*/*;q=0.5' },
    });
  } catch (error) {
    if (args.signal.aborted) throw error;
    if (error instanceof OutboundError && error.code === 'BLOCKED_ADDRESS')
      throw new SourceError('config', error.message);
    return { kind: 'failure', failure: { document_id: url, link: url, message: (error as Error).message } };
  }
  if (response.status === 429 || response.status === 503) {
    await response.body?.cancel();
    throw new SourceError('rate_limited', `${new URL(url).host} answered ${response.status}`, {
      retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
    });
  }
  if (response.status === 401 || response.status === 403) {
    await response.body?.cancel();
    throw new SourceError('auth', `${new URL(url).host} refused access (${response.status})`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    // A broken link (or a sitemap entry that is gone): reported on the attempt, and not kept in the index.
    if (response.status === 404 || response.status === 410)
      return {
        kind: 'failure',
        failure: { document_id: url, link: url, message: `Broken link: HTTP ${response.status}`, gone: true },
      };
    return { kind: 'failure', failure: { document_id: url, link: url, message: `HTTP ${response.status}` } };
  }
  const finalUrl = normalise(response.url || url, url) ?? url;
  const type = response.headers.get('content-type') ?? '';
  const updated = response.headers.get('last-modified');
  const doc_updated_at = updated && !Number.isNaN(Date.parse(updated)) ? new Date(updated) : null;
  if (/application\/pdf/i.test(type) || /\.pdf$/i.test(new URL(finalUrl).pathname)) {
    const data = new Uint8Array(await response.arrayBuffer());
    let text: string;
    try {
      text = await args.extract.text({ name: finalUrl, contentType: 'application/pdf', data });
    } catch (error) {
      if (args.signal.aborted) throw error;
      const message = `Unreadable PDF${unreadableReason(error)}`;
      return { kind: 'failure', failure: { document_id: finalUrl, link: finalUrl, message } };
    }
    if (!text.trim())
      return {
        kind: 'failure',
        failure: { document_id: finalUrl, link: finalUrl, message: 'Unreadable PDF' },
      };
    const name = decodeURIComponent(new URL(finalUrl).pathname.split('/').pop() || finalUrl);
    return {
      kind: 'page',
      finalUrl,
      links: [],
      doc: { id: finalUrl, semantic_identifier: name, sections: [{ text, link: finalUrl }], doc_updated_at },
    };
  }
  if (!/html|xml|text\/plain/i.test(type) && type) {
    await response.body?.cancel();
    return { kind: 'skip' };
  }
  const body = new Uint8Array(await response.arrayBuffer());
  if (/text\/plain/i.test(type)) {
    let text: string;
    try {
      text = await args.extract.text({ name: finalUrl, contentType: 'text/plain', data: body });
    } catch (error) {
      return unreadablePage(args, finalUrl, error);
    }
    return {
      kind: 'page',
      finalUrl,
      links: [],
      doc: {
        id: finalUrl,
        semantic_identifier: finalUrl,
        sections: [{ text, link: finalUrl }],
        doc_updated_at,
      },
    };
  }
  let page: ExtractedPage;
  try {
    page = await args.extract.html(finalUrl, body);
  } catch (error) {
    return unreadablePage(args, finalUrl, error);
  }
  const links = page.links.map((l) => normalise(l, finalUrl)).filter((l): l is string => !!l);
  if (page.noindex || !page.text.trim()) return { kind: 'skip' };
  return {
    kind: 'page',
    finalUrl,
    links,
    doc: {
      id: finalUrl,
      semantic_identifier: page.title ?? finalUrl,
      title: page.title,
      sections: [{ text: page.text, link: finalUrl }],
      doc_updated_at,
    },
  };
}

async function robotsOf(args: LoadArgs<WebConfig, unknown>, base: URL): Promise<(path: string) => boolean> {
  try {
    const response = await args.fetch(new URL('/robots.txt', base).href, { signal: args.signal });
    if (!response.ok) {
      await response.body?.cancel();
      return () => true;
    }
    return parseRobots(await response.text());
  } catch (error) {
    if (args.signal.aborted) throw error;
    return () => true;
  }
}

/**
 * The page URLs a sitemap lists, following a sitemap index (three levels deep), one at a time: the caller
 * stops when it has enough and the nested sitemaps after that are never fetched. One sitemap's text is
 * bounded by the outbound size cap; nothing holds the URLs of all of them.
 */
async function* sitemapUrls(
  args: LoadArgs<WebConfig, unknown>,
  sitemap: string,
  depth = 0,
): AsyncGenerator<string> {
  const response = await args.fetch(sitemap, { signal: args.signal });
  if (response.status === 429 || response.status === 503) {
    await response.body?.cancel();
    throw new SourceError('rate_limited', `The sitemap answered ${response.status}`, {
      retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
    });
  }
  if (response.status === 401 || response.status === 403)
    throw new SourceError('auth', `The sitemap refused access (${response.status})`);
  if (!response.ok) throw new SourceError('config', `The sitemap ${sitemap} answered ${response.status}`);
  const { urls, isIndex } = sitemapLocations(await response.text());
  for (const url of urls) {
    if (!isIndex || depth > 2) yield url;
    else yield* sitemapUrls(args, url, depth + 1);
  }
}

/** Default of `KAS_WEB_MAX_PAGES` when the run does not say. */
const DEFAULT_MAX_PAGES = 100_000;

async function* load(args: LoadArgs<WebConfig, unknown>): AsyncIterable<SourceBatch> {
  const { base_url, web_connector_type } = args.config;
  const base = new URL(base_url);
  const allowed = await robotsOf(args, base);
  const saved = args.checkpoint as unknown as Checkpoint | null;
  const maxPages = args.maxPages ?? DEFAULT_MAX_PAGES;
  let queue: string[];
  const visited = SeenUrls.from(saved);
  if (saved?.started) {
    queue = [...saved.queue];
  } else if (web_connector_type === 'sitemap') {
    queue = [];
    for await (const listed of sitemapUrls(args, base.href)) {
      const url = normalise(listed, base.href);
      if (!url || visited.has(url)) continue;
      visited.add(url);
      queue.push(url);
      if (queue.length >= maxPages) break;
    }
  } else {
    queue = [normalise(base.href, base.href) as string];
  }
  for (const url of queue) visited.add(url);
  let read = saved?.started ? (saved.done ?? 0) : 0;
  while (queue.length) {
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    let limited: SourceError | null = null;
    while (queue.length && !limited && documents.length + failures.length < BATCH_SIZE) {
      const taken = queue.splice(0, PARALLEL);
      const slice = taken.filter((url) => allowed(new URL(url).pathname));
      read += taken.length;
      const settled = await Promise.allSettled(slice.map((url) => fetchPage(args, url)));
      const fetched: Fetched[] = [];
      const again: string[] = [];
      for (const [i, outcome] of settled.entries()) {
        if (outcome.status === 'fulfilled') {
          fetched.push(outcome.value);
          continue;
        }
        const error = outcome.reason;
        if (!(error instanceof SourceError) || error.kind !== 'rate_limited' || args.signal.aborted)
          throw error;
        // Rate limited: this page is read again when the attempt resumes; the pages read beside it are kept.
        limited ??= error;
        again.push(slice[i] as string);
      }
      if (again.length) {
        queue.unshift(...again);
        read -= again.length;
      }
      for (const result of fetched) {
        if (result.kind === 'failure') failures.push(result.failure);
        if (result.kind !== 'page') continue;
        if (!visited.has(result.finalUrl)) visited.add(result.finalUrl);
        documents.push(result.doc);
        if (web_connector_type !== 'recursive') continue;
        for (const link of result.links) {
          if (visited.size < maxPages && !visited.has(link) && inScope(link, base)) {
            visited.add(link);
            queue.push(link);
          }
        }
      }
    }

    yield {
      documents,
      failures,
      checkpoint: queue.length
        ? ({
            queue,
            seen: visited.encode(),
            started: true,
            done: read,
          } satisfies Checkpoint as unknown as JsonValue)
        : null,
      // Pages read so far and those queued: a redirect's target or a page robots.txt forbids is not counted twice.
      total: read + queue.length,
    };
    // What was read is yielded (and checkpointed) first: the attempt resumes after it when the limit ends.
    if (limited) throw limited;
  }
}

/**
 * Every page the site still has (a crawl that keeps only ids). A page that failed hides the pages only
 * it links to, so such a listing is incomplete and fails: a prune must not remove what it did not see.
 */
async function* listIds(args: SourceRunContext<WebConfig, unknown>): AsyncIterable<string[]> {
  for await (const batch of load({ ...args, checkpoint: null, window: { start: null, end: new Date() } })) {
    const unread = batch.failures?.filter((f) => !f.gone) ?? [];
    if (unread.length) {
      throw new SourceError(
        'transient',
        `${unread.length} page(s) could not be read; the listing is incomplete`,
      );
    }
    yield batch.documents.map((d) => d.id);
  }
}

/** Web pages: one site crawled under its base path, one page, or a sitemap; robots.txt honoured. */
export const webSource: Source<WebConfig, Record<string, never>> = {
  name: 'web',
  displayName: 'Web',
  needsCredential: false,
  inputTypes: ['poll', 'load_state'],
  fullListing: true,
  validateConfig: (raw) => validateWith(WebConfig, raw),
  validateCredential: (raw) => validateWith(z.object({}).passthrough(), raw) as never,
  load: (args) => load(args as LoadArgs<WebConfig, unknown>),
  listIds: (args) => listIds(args),
};
