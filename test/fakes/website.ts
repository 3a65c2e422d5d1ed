import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local website: pages by path (HTML), robots.txt, sitemap.xml, redirects, 429 with Retry-After and failures on demand. */
export interface FakeWebsite {
  url: string;
  pages: Map<string, string>;
  /** Paths answered with a redirect to another path. */
  redirects: Map<string, string>;
  /** How many requests each path received. */
  hits: Map<string, number>;
  robots: string;
  /** The next N requests (after `after` more are served, when set) answer 429 with this Retry-After (seconds). */
  rateLimit: { remaining: number; retryAfter: number; after?: number };
  /** Paths answered with this status (a poisoned page: 500, a broken link: 404). */
  statuses: Map<string, number>;
  /** Answer every page with this status (e.g. 401) while set. */
  failWith: number | null;
  /** Delay every page answer (ms). */
  delayMs: number;
  close(): Promise<void>;
}

const words =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango'.split(
    ' ',
  );

/** An HTML page with a title, some words and links to other paths. */
export function htmlPage(title: string, body: string, links: string[] = []): string {
  return `<!doctype html><html><head><title>${title}</title><script>var ignored = 1;</script></head><body>
<nav><a href="/">Home</a></nav><main><h1>${title}</h1><p>${body}</p>
<ul>${links.map((l) => `<li><a href="${l}">${l}</a></li>`).join('')}</ul></main><footer>footer text</footer></body></html>`;
}

/** A generated site of `count` linked pages of about `wordsPerPage` words (page i links to the next ones). */
export function generatedSite(count: number, wordsPerPage = 300): Map<string, string> {
  const pages = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const body = Array.from({ length: wordsPerPage }, (_, w) => words[(i * 7 + w * 13) % words.length]).join(
      ' ',
    );
    const links = [1, 2, 3].map((d) => `/page/${(i + d) % count}`);
    pages.set(
      i === 0 ? '/' : `/page/${i}`,
      htmlPage(`Page ${i}`, `page${i} ${body}`, i === 0 ? ['/page/1', '/page/2'] : links),
    );
  }
  return pages;
}

export async function startFakeWebsite(pages: Map<string, string> = new Map()): Promise<FakeWebsite> {
  const site: Omit<FakeWebsite, 'url' | 'close'> = {
    pages,
    redirects: new Map(),
    hits: new Map(),
    robots: 'User-agent: *\nDisallow: /private/\n',
    rateLimit: { remaining: 0, retryAfter: 1 },
    statuses: new Map(),
    failWith: null,
    delayMs: 0,
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    site.hits.set(path, (site.hits.get(path) ?? 0) + 1);
    const answer = () => {
      if (path === '/robots.txt') {
        res.setHeader('content-type', 'text/plain');
        return res.end(site.robots);
      }
      if (site.failWith) {
        res.statusCode = site.failWith;
        return res.end('no');
      }
      if (site.rateLimit.after) site.rateLimit.after--;
      else if (site.rateLimit.remaining > 0) {
        site.rateLimit.remaining--;
        res.statusCode = 429;
        res.setHeader('retry-after', String(site.rateLimit.retryAfter));
        return res.end('slow down');
      }
      if (path === '/sitemap.xml') {
        res.setHeader('content-type', 'application/xml');
        const locs = [...site.pages.keys()]
          .map((p) => `<url><loc>http://${req.headers.host}${p}</loc></url>`)
          .join('');
        return res.end(`<?xml version="1.0"?><urlset>${locs}</urlset>`);
      }
      const status = site.statuses.get(path);
      if (status) {
        res.statusCode = status;
        return res.end('failed');
      }
      const target = site.redirects.get(path);
      if (target) {
        res.statusCode = 301;
        res.setHeader('location', target);
        return res.end();
      }
      const page = site.pages.get(path);
      if (page === undefined) {
        res.statusCode = 404;
        return res.end('not found');
      }
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(page);
    };
    if (site.delayMs) setTimeout(answer, site.delayMs);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(site, {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  }) as FakeWebsite;
}
