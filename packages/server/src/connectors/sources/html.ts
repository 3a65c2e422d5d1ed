import { Parser } from 'htmlparser2';

const SKIP = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'nav',
  'footer',
  'header',
  'iframe',
  'form',
  'head',
]);
const BLOCK = new Set([
  'p',
  'div',
  'section',
  'article',
  'main',
  'br',
  'li',
  'ul',
  'ol',
  'tr',
  'table',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'pre',
  'blockquote',
  'dd',
  'dt',
  'hr',
  'td',
  'th',
]);

/** Links kept of one page (a crawl follows at most this many from it). */
const MAX_LINKS = 10_000;

export interface ExtractedPage {
  title: string | null;
  text: string;
  links: string[];
  /** `<meta name="robots" content="noindex">` */
  noindex: boolean;
}

/** Readable text, title and links of an HTML page, in one streaming pass (boilerplate elements skipped). */
export function extractHtml(html: string): ExtractedPage {
  let title = '';
  let h1 = '';
  let inTitle = false;
  let inH1 = false;
  let skipDepth = 0;
  let noindex = false;
  const parts: string[] = [];
  const links: string[] = [];
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (name === 'a' && attrs.href && links.length < MAX_LINKS) links.push(attrs.href);
        if (name === 'meta' && attrs.name?.toLowerCase() === 'robots' && /noindex/i.test(attrs.content ?? ''))
          noindex = true;
        if (name === 'title') inTitle = true;
        if (name === 'h1' && !h1) inH1 = true;
        if (SKIP.has(name)) skipDepth++;
        if (BLOCK.has(name)) parts.push('\n');
      },
      ontext(text) {
        if (inTitle) title += text;
        if (inH1) h1 += text;
        if (skipDepth === 0) parts.push(text);
      },
      onclosetag(name) {
        if (name === 'title') inTitle = false;
        if (name === 'h1') inH1 = false;
        if (SKIP.has(name)) skipDepth = Math.max(0, skipDepth - 1);
        if (BLOCK.has(name)) parts.push('\n');
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  const text = parts
    .join('')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
  const clean = (s: string) => s.replace(/\s+/g, ' ').trim() || null;
  return { title: clean(title) ?? clean(h1), text, links, noindex };
}

/** `<loc>` entries of a sitemap or sitemap index. */
export function sitemapLocations(xml: string): { urls: string[]; isIndex: boolean } {
  const urls = [...xml.matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/gi)].map((m) =>
    (m[1] ?? '').replace(/&amp;/g, '&'),
  );
  return { urls, isIndex: /<sitemapindex[\s>]/i.test(xml) };
}

/** The rules of robots.txt for every crawler (`User-agent: *`) or ours, longest match wins. */
export function parseRobots(text: string): (path: string) => boolean {
  const rules: { allow: boolean; prefix: string }[] = [];
  let applies = false;
  let lastWasAgent = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/#.*/, '').trim();
    const match = /^([A-Za-z-]+)\s*:\s*(.*)$/.exec(line);
    if (!match) continue;
    const key = (match[1] ?? '').toLowerCase();
    const value = (match[2] ?? '').trim();
    if (key === 'user-agent') {
      const ours = value === '*' || /kas/i.test(value);
      applies = lastWasAgent ? applies || ours : ours;
      lastWasAgent = true;
      continue;
    }
    lastWasAgent = false;
    if (!applies || (key !== 'allow' && key !== 'disallow')) continue;
    if (key === 'disallow' && value === '') continue;
    rules.push({ allow: key === 'allow', prefix: value });
  }
  return (path) => {
    let best: { allow: boolean; prefix: string } | null = null;
    for (const rule of rules) {
      const prefix = rule.prefix.replace(/\*$/, '');
      if (path.startsWith(prefix) && (!best || prefix.length > best.prefix.length))
        best = { ...rule, prefix };
    }
    return best ? best.allow : true;
  };
}
