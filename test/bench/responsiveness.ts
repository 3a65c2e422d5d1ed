/**
 * Responsiveness under heavy ingestion (issue 22, deliverable 2), on the embedded database and on a real
 * Postgres, kas in its own process:
 *   1. quiet: `GET /api/health` and an authenticated admin search (`POST /api/admin/search`), one probe
 *      of each at a time, over an index of a few hundred small documents;
 *   2. loaded: the same probes while 8 clients each ingest 5 MB documents (`POST /api/svc-api/ingestion`)
 *      and one uploads a 20 MB PDF of many pages of text (`POST /api/chat/file`; a clean 413 from a
 *      page or text limit is accepted as well as a document).
 * Targets: health p99 ≤ 50 ms, search p99 ≤ 2× its quiet figure.
 * Sizes: BENCH_RESP_DOC_MB (5), BENCH_RESP_DOCS_PER_CLIENT (1), BENCH_RESP_PDF_MB (20).
 * `npm run bench -w test -- responsiveness [embedded|postgres]`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rng } from '@kas/server/testing';
import { manyPagePdf } from '../harness/office-files.ts';
import { startPostgres } from '../harness/postgres.ts';
import { ADMIN_KEY, ENCRYPTION_KEY, spawnKas, text } from './documents.ts';

const CLIENTS = 8;
const DOC_MB = Number(process.env.BENCH_RESP_DOC_MB ?? 5);
const DOCS_PER_CLIENT = Number(process.env.BENCH_RESP_DOCS_PER_CLIENT ?? 1);
const PDF_MB = Number(process.env.BENCH_RESP_PDF_MB ?? 20);
const QUIET_PROBES = 200;
const HEALTH_EVERY_MS = 20;
const SEARCH_EVERY_MS = 50;
const QUERIES = ['project schedule', 'payment record', 'network security', 'quality review', 'storage limit'];

const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const auth = { authorization: `Bearer ${ADMIN_KEY}` };

function percentile(values: number[], p: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1));
}

/** One request on the keep-alive agent; its status and duration (ms). */
function probe(url: string, method: string, body?: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, agent, headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const health = (url: string) => probe(`${url}/api/health`, 'GET');
const search = (url: string, i: number) =>
  probe(
    `${url}/api/admin/search`,
    'POST',
    JSON.stringify({ query: QUERIES[i % QUERIES.length], filters: {} }),
  );

/** Probes at a steady pace until `until` settles: each loop waits for its answer before the next. */
async function probeWhile(
  until: Promise<unknown>,
  fn: (i: number) => Promise<{ status: number; ms: number }>,
  every: number,
) {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const times: number[] = [];
  let failures = 0;
  for (let i = 0; !done; i++) {
    const { status, ms } = await fn(i);
    times.push(ms);
    if (status !== 200) failures++;
    if (ms < every) await new Promise((r) => setTimeout(r, every - ms));
  }
  return { times, failures };
}

function figures(times: number[]) {
  return {
    n: times.length,
    p50_ms: percentile(times, 50),
    p99_ms: percentile(times, 99),
    max_ms: Number(Math.max(...times).toFixed(1)),
  };
}

/** A document of about `mb` MB of word-like English text. */
function bigDocument(seed: number, mb: number): string {
  const random = rng(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < mb * 1_000_000) {
    const part = text(random, 1000);
    parts.push(part);
    length += part.length + 1;
  }
  return parts.join(' ');
}

async function ingestBig(url: string, id: string, sectionText: string) {
  const started = performance.now();
  const res = await fetch(`${url}/api/svc-api/ingestion`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      document: { id, semantic_identifier: `Big ${id}`, sections: [{ text: `${id}. ${sectionText}` }] },
    }),
  });
  const answer = await res.text();
  return { status: res.status, ms: performance.now() - started, answer: answer.slice(0, 200) };
}

async function uploadPdf(url: string, pdf: Buffer) {
  const form = new FormData();
  form.append('files', new Blob([new Uint8Array(pdf)], { type: 'application/pdf' }), 'big.pdf');
  const started = performance.now();
  const res = await fetch(`${url}/api/chat/file`, { method: 'POST', headers: auth, body: form });
  const answer = await res.text();
  return { status: res.status, ms: performance.now() - started, answer: answer.slice(0, 300) };
}

function pdfOf(mb: number): Buffer {
  const random = rng(7);
  const pages: string[][] = [];
  let bytes = 0;
  while (bytes < mb * 1_000_000) {
    const lines = Array.from({ length: 55 }, () => text(random, 14));
    bytes += lines.reduce((n, l) => n + l.length + 8, 60);
    pages.push(lines);
  }
  return manyPagePdf(pages);
}

async function run(database: 'embedded' | 'postgres', docText: string, pdf: Buffer) {
  const postgres = database === 'postgres' ? await startPostgres() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-resp-'));
  const server = await spawnKas({
    KAS_MAX_UPLOAD_MB: String(Math.ceil(PDF_MB * 1.5)),
    KAS_MAX_BODY_MB: String(Math.ceil(DOC_MB * 2 + 2)),
    ...(postgres
      ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY }
      : { KAS_DATA_DIR: dataDir }),
  });
  try {
    // An index to search: a few hundred small documents.
    const random = rng(3);
    for (let i = 0; i < 300; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          fetch(`${server.url}/api/svc-api/ingestion`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({
              document: {
                id: `small-${i + j}`,
                semantic_identifier: `Small ${i + j}`,
                sections: [{ text: text(random, 300) }],
              },
            }),
          }).then((r) => r.text()),
        ),
      );
    }
    for (let i = 0; i < 20; i++) {
      await health(server.url);
      await search(server.url, i);
    }
    const quietHealth: number[] = [];
    const quietSearch: number[] = [];
    for (let i = 0; i < QUIET_PROBES; i++) {
      quietHealth.push((await health(server.url)).ms);
      quietSearch.push((await search(server.url, i)).ms);
    }

    const started = performance.now();
    const ingestions = Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const results = [];
        for (let d = 0; d < DOCS_PER_CLIENT; d++)
          results.push(await ingestBig(server.url, `big-${c}-${d}`, docText));
        return results;
      }),
    );
    const upload = uploadPdf(server.url, pdf);
    const load = Promise.all([ingestions, upload]);
    const [loadedHealth, loadedSearch, [ingested, uploaded]] = await Promise.all([
      probeWhile(load, () => health(server.url), HEALTH_EVERY_MS),
      probeWhile(load, (i) => search(server.url, i), SEARCH_EVERY_MS),
      load,
    ]);
    const flat = ingested.flat();
    const quiet = { health: figures(quietHealth), search: figures(quietSearch) };
    const loaded = { health: figures(loadedHealth.times), search: figures(loadedSearch.times) };
    return {
      database,
      load_seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
      documents: {
        count: flat.length,
        mb_each: Number((docText.length / 1e6).toFixed(1)),
        statuses: [...new Set(flat.map((r) => r.status))],
        slowest_ms: Math.round(Math.max(...flat.map((r) => r.ms))),
        ...(flat.some((r) => r.status !== 200)
          ? { example: flat.find((r) => r.status !== 200)!.answer }
          : {}),
      },
      pdf: {
        mb: Number((pdf.length / 1e6).toFixed(1)),
        status: uploaded.status,
        ms: Math.round(uploaded.ms),
        ...(uploaded.status !== 200 ? { answer: uploaded.answer } : {}),
      },
      quiet,
      loaded,
      probe_failures: loadedHealth.failures + loadedSearch.failures,
      targets: {
        health_p99_le_50ms: loaded.health.p99_ms <= 50,
        search_p99_le_2x_quiet: loaded.search.p99_ms <= 2 * quiet.search.p99_ms,
      },
    };
  } finally {
    await server.stop();
    await postgres?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const chosen = process.argv[2] as 'embedded' | 'postgres' | undefined;
  const docText = bigDocument(11, DOC_MB);
  const pdf = pdfOf(PDF_MB);
  for (const database of chosen ? [chosen] : (['embedded', 'postgres'] as const)) {
    console.log(JSON.stringify(await run(database, docText, pdf), null, 2));
  }
  agent.destroy();
}
