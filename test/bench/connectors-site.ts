// A generated website for the connectors benchmark, in its own process: `sections` sections of linked
// pages of ~300 words, generated on request (nothing held in memory); GET /__hits reports request counts.
import { createServer } from 'node:http';

const pages = Number(process.argv[2] ?? 20_000);
const sections = Number(process.argv[3] ?? 1);
const perSection = Math.ceil(pages / sections);
const hits = new Uint32Array(pages);
const WORDS =
  'account action answer balance board build capital center change charge check claim credit design detail engine entry event factor field figure finance focus frame growth guide health image impact index input issue judge labor language launch layer learn level light limit market master matter measure media member memory method model motion network number object office order output owner panel paper pattern payment period person phase place policy power practice price process product profit program project property quality query range record region report request research resource result review'.split(
    ' ',
  );

function page(section: number, i: number): string {
  const index = section * perSection + i;
  const words: string[] = [];
  for (let w = 0; w < 300; w++)
    words.push(WORDS[(index * 31 + w * 17 + ((w * w) % 7)) % WORDS.length] as string);
  const links = [1, 2, 3, 50]
    .map((d) => i + d)
    .filter((j) => j < perSection && section * perSection + j < pages)
    .map((j) => `<a href="/s${section}/p${j}">next ${j}</a>`);
  return `<!doctype html><html><head><title>Section ${section} page ${i}</title></head><body><nav><a href="/s${section}/">home</a></nav>
<main><h1>Section ${section} page ${i}</h1><p>token${index} ${words.join(' ')}</p>${links.join(' ')}</main></body></html>`;
}

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (path === '/__hits') {
    let total = 0;
    let distinct = 0;
    let max = 0;
    for (const n of hits) {
      total += n;
      if (n) distinct++;
      if (n > max) max = n;
    }
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify({ total, distinct, max }));
  }
  if (path === '/__reset') {
    hits.fill(0);
    return res.end('ok');
  }
  if (path === '/robots.txt') return res.end('User-agent: *\nDisallow:\n');
  const match = /^\/s(\d+)\/(?:p(\d+))?$/.exec(path);
  const section = Number(match?.[1]);
  const i = match?.[2] === undefined ? 0 : Number(match[2]);
  const index = section * perSection + i;
  if (!match || section >= sections || i >= perSection || index >= pages) {
    res.statusCode = 404;
    return res.end('not found');
  }
  hits[index] = (hits[index] ?? 0) + 1;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(page(section, i));
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
