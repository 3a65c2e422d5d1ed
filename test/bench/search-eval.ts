/**
 * Retrieval and answer evaluation on real documentation corpora nobody here wrote, read from Debian's
 * packages (installed with apt-get when missing, skipped with a message when that is impossible, as on a
 * distribution that no longer packages Python 3.11's documentation):
 * - `postgresql`: the PostgreSQL 15 manual from `postgresql-doc-15` (~1,100 HTML pages),
 *   golden set test/eval/postgresql-15.golden.jsonl;
 * - `python`: the Python 3.11 documentation's reStructuredText sources from `python3.11-doc` (library,
 *   tutorial, howto and faq: 363 pages), golden set test/eval/python-3.11.golden.jsonl, whose cases
 *   carry `answer_contains` (the built-in answerer's answer must contain the identifier asked for).
 * The pages are ingested through the API, then `kas eval` runs the golden set (admin search and chat
 * with the built-in answerer) against the running service, on the embedded database and on Postgres.
 * Beside it, a page-level BM25 computed here over the same pages (k1 1.2, b 0.75, title tokens counted
 * five times, a short stop-word list) — the textbook baseline admin search must match.
 * `npm run bench -w test -- search-eval` runs both; BENCH_EVAL_CORPUS=postgresql|python runs one;
 * BENCH_EVAL_DATABASES=embedded|postgres to run one database.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluationService } from '@kas/server';
import { extractHtml } from '@kas/server/testing';
import { startPostgres } from '../harness/postgres.ts';
import { ADMIN_KEY, ENCRYPTION_KEY, spawnKas } from './documents.ts';

const root = join(import.meta.dirname, '../..');
const CLIENTS = 8;

export interface Corpus {
  name: string;
  path: string;
  debianPackage: string;
  golden: string;
  load(): Page[];
  link(id: string): string;
}

export const CORPORA: Record<string, Corpus> = {
  postgresql: {
    name: 'postgresql',
    path: '/usr/share/doc/postgresql-doc-15/html',
    debianPackage: 'postgresql-doc-15',
    golden: join(root, 'test/eval/postgresql-15.golden.jsonl'),
    load: loadPostgresPages,
    link: (id) => `https://www.postgresql.org/docs/15/${id}`,
  },
  python: {
    name: 'python',
    path: '/usr/share/doc/python3.11/html/_sources',
    debianPackage: 'python3.11-doc',
    golden: join(root, 'test/eval/python-3.11.golden.jsonl'),
    load: loadPythonPages,
    link: (id) => `https://docs.python.org/3.11/${id}.html`,
  },
};

export function ensureCorpus(corpus: Corpus): boolean {
  const CORPUS = corpus.path;
  if (existsSync(CORPUS)) return true;
  console.log(`${CORPUS} is missing: installing ${corpus.debianPackage} with apt-get…`);
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const run = (args: string[]) =>
    spawnSync(sudo[0] ?? args[0]!, [...sudo.slice(1), ...(sudo.length ? args : args.slice(1))], {
      stdio: 'inherit',
    });
  run(['apt-get', 'update']);
  run(['apt-get', 'install', '-y', corpus.debianPackage]);
  if (existsSync(CORPUS)) return true;
  console.log(
    `Skipped the ${corpus.name} corpus: ${corpus.debianPackage} could not be installed (needs apt-get, root or passwordless sudo, and a distribution that packages it).`,
  );
  return false;
}

export interface Page {
  id: string;
  title: string;
  text: string;
}

/** Every page's title and readable text (the manual's navigation bars removed). */
function loadPostgresPages(): Page[] {
  const CORPUS = CORPORA.postgresql!.path;
  return readdirSync(CORPUS)
    .filter((f) => f.endsWith('.html'))
    .sort()
    .map((file) => {
      const html = readFileSync(join(CORPUS, file), 'utf8').replace(
        /<div class="nav(header|footer)">[\s\S]*?<\/div>/g,
        '',
      );
      const page = extractHtml(html);
      return { id: file, title: page.title ?? file, text: page.text };
    })
    .filter((p) => p.text.length > 0);
}

/** The reStructuredText sources as a user would add them: the text as is, titled by the first heading. */
function loadPythonPages(): Page[] {
  const base = CORPORA.python!.path;
  return ['library', 'tutorial', 'howto', 'faq']
    .flatMap((dir) =>
      readdirSync(join(base, dir))
        .filter((f) => f.endsWith('.rst.txt'))
        .sort()
        .map((file) => {
          const text = readFileSync(join(base, dir, file), 'utf8');
          const id = `${dir}/${file.replace(/\.rst\.txt$/, '')}`;
          const heading = /^([^\n.*=][^\n]*)\n[=*]{3,}\s*$/m.exec(text)?.[1];
          const title = heading?.replace(/:\w+:`([^`]+)`/g, '$1').trim() ?? id;
          return { id, title, text };
        }),
    )
    .filter((p) => p.text.trim().length > 0);
}

// The in-process baseline: page-level BM25, k1 1.2, b 0.75, title ×5, a short stop-word list.
const STOP = new Set(
  'a an and are as at be by can do does for from how i in is it my of on or the to what when where which who why with you your'.split(
    ' ',
  ),
);
const tokens = (text: string) =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => !STOP.has(t));

function baselineBm25(pages: Page[]) {
  const docs = pages.map((p) => {
    const tf = new Map<string, number>();
    const all = [...Array(5).fill(tokens(p.title)).flat(), ...tokens(p.text)] as string[];
    for (const t of all) tf.set(t, (tf.get(t) ?? 0) + 1);
    return { id: p.id, tf, length: all.length };
  });
  const avg = docs.reduce((s, d) => s + d.length, 0) / docs.length;
  const df = new Map<string, number>();
  for (const d of docs) for (const t of d.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const n = docs.length;
  return (question: string): string[] => {
    const q = [...new Set(tokens(question))];
    return docs
      .map((d) => {
        let score = 0;
        for (const t of q) {
          const f = d.tf.get(t);
          if (!f) continue;
          const idf = Math.log(1 + (n - df.get(t)! + 0.5) / (df.get(t)! + 0.5));
          score += (idf * (f * 2.2)) / (f + 1.2 * (0.25 + (0.75 * d.length) / avg));
        }
        return { id: d.id, score };
      })
      .filter((d) => d.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, 50)
      .map((d) => d.id);
  };
}

async function ingest(url: string, pages: Page[], corpus: Corpus) {
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < pages.length; i = next++) {
        const page = pages[i]!;
        const res = await fetch(`${url}/api/svc-api/ingestion`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            document: {
              id: page.id,
              semantic_identifier: page.title,
              sections: [{ text: page.text, link: corpus.link(page.id) }],
              source: 'web',
            },
          }),
        });
        await res.text();
        if (!res.ok) failures++;
      }
    }),
  );
  return { pages: pages.length, failures, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

function kasEval(url: string, golden: string) {
  const result = spawnSync(
    process.execPath,
    [join(root, 'packages/rest-bridge/src/cli.ts'), 'eval', golden, '--url', url, '--json'],
    { env: { ...process.env, KAS_API_KEY: ADMIN_KEY }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (result.status !== 0) throw new Error(`kas eval failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as Awaited<ReturnType<typeof evaluationService.runEvaluation>>;
}

async function run(database: 'embedded' | 'postgres', pages: Page[], corpus: Corpus) {
  const postgres = database === 'postgres' ? await startPostgres() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-eval-'));
  const kas = await spawnKas(
    postgres ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY } : { KAS_DATA_DIR: dataDir },
  );
  try {
    const ingestion = await ingest(kas.url, pages, corpus);
    // Statistics are folded and weights settle in the background a second after the last write.
    await new Promise((r) => setTimeout(r, 5000));
    const report = kasEval(kas.url, corpus.golden);
    return { database, ingestion, ...report };
  } finally {
    await kas.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await postgres?.stop();
  }
}

// Run as a script (the search benchmark imports the corpora from here).
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const name of (process.env.BENCH_EVAL_CORPUS ?? 'postgresql,python').split(',')) {
    const corpus = CORPORA[name];
    if (!corpus)
      throw new Error(`BENCH_EVAL_CORPUS: unknown corpus ${name} (${Object.keys(CORPORA).join(', ')})`);
    if (ensureCorpus(corpus)) await evaluateCorpus(corpus);
  }
}

async function evaluateCorpus(corpus: Corpus) {
  const pages = corpus.load();
  const cases = evaluationService.parseGoldenSet(readFileSync(corpus.golden, 'utf8'));
  const bm25 = baselineBm25(pages);
  const baseline = evaluationService.searchMetrics(
    cases.map((c) => ({ ranked: bm25(c.question), expected: new Set(c.document_ids) })),
  );
  console.log(`${corpus.name}: ${pages.length} pages; golden set: ${cases.length} questions`);
  console.log('in-process page-level BM25 (k1 1.2, b 0.75, title ×5):', JSON.stringify(baseline));
  const databases = (process.env.BENCH_EVAL_DATABASES ?? 'embedded,postgres').split(',') as (
    | 'embedded'
    | 'postgres'
  )[];
  for (const database of databases) {
    const result = await run(database, pages, corpus);
    console.log(
      JSON.stringify(
        {
          database,
          ingestion: result.ingestion,
          admin_search: result.search,
          chat: result.chat,
          missing_document_ids: result.missing_document_ids,
        },
        null,
        2,
      ),
    );
    const missed = result.results.filter((r) => r.first_expected_rank === null || r.first_expected_rank > 5);
    for (const r of missed)
      console.log(`  missed@5: ${r.question} → ${r.top_documents.slice(0, 3).join(', ')}`);
    const badChat = result.results.filter(
      (r, i) => r.cited_documents && !cases[i]!.document_ids.includes(r.cited_documents[0] ?? ''),
    );
    for (const r of badChat)
      console.log(`  citation [1] not expected: ${r.question} → ${r.cited_documents?.join(', ')}`);
    for (const r of result.results.filter((r) => r.answer_contains_expected === false))
      console.log(
        `  answer lacks the expected text: ${r.question} → ${(r.answer ?? '(failed)').slice(0, 200)}`,
      );
  }
}
