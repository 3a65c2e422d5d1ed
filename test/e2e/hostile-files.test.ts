import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWebsite, startFakeWebsite } from '../fakes/website.ts';
import {
  DOCUMENT_CLOSE,
  DOCUMENT_OPEN,
  DOCX_TYPE,
  deflatedRepeat,
  docxWith,
  trivialPagesPdf,
  zip,
} from '../harness/office-files.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

/**
 * The hostile-file corpus (issue 22): each file ends in a clear refusal naming the limit, or a correct
 * document, while `GET /api/health` keeps answering and the process's memory stays bounded. The server
 * runs in this process (its parsing threads included), so this process's RSS is the server's.
 */
const RSS_BOUND_MB = 300;
/** Longest a health check may wait while a hostile file is read (the event loop never waits on parsing). */
const HEALTH_BOUND_MS = 1000;

let s: TestServer;
let site: FakeWebsite;
let limited: string;

type Json = Record<string, any>;
type Upload = { data: Buffer | string; type: string; name: string };

beforeAll(async () => {
  s = await startTestServer({
    worker: true,
    env: { KAS_OUTBOUND_ALLOWLIST: '127.0.0.1', KAS_CONNECTOR_HEARTBEAT_MS: '200' },
  });
  site = await startFakeWebsite();
  ({ key: limited } = await s.createKey('limited', 'attacker'));
});
afterAll(async () => {
  await site?.close();
  await s?.close();
});

/**
 * Runs `work` while probing `/api/health` every 100 ms and sampling this process's RSS; the health
 * probes' durations and the peak RSS growth.
 */
async function underWatch<T>(
  work: () => Promise<T>,
): Promise<{ value: T; healthMs: number[]; rssGrowthMb: number }> {
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  const healthMs: number[] = [];
  let settled = false;
  const watched = work().finally(() => {
    settled = true;
  });
  const probes = (async () => {
    do {
      const started = performance.now();
      const res = await fetch(`${s.url}/api/health`, { signal: AbortSignal.timeout(60_000) });
      await res.arrayBuffer();
      expect(res.status).toBe(200);
      healthMs.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 100));
    } while (!settled);
  })();
  try {
    const value = await watched;
    await probes;
    return { value, healthMs, rssGrowthMb: (Math.max(peak, process.memoryUsage().rss) - rss0) / 1024 / 1024 };
  } finally {
    clearInterval(sampler);
  }
}

function expectBounded(watch: { healthMs: number[]; rssGrowthMb: number }, healthBoundMs = HEALTH_BOUND_MS) {
  expect(watch.healthMs.length).toBeGreaterThan(0);
  expect(Math.max(...watch.healthMs)).toBeLessThan(healthBoundMs);
  expect(watch.rssGrowthMb).toBeLessThan(RSS_BOUND_MB);
}

function form(files: Upload[]): FormData {
  const body = new FormData();
  for (const f of files)
    body.append(
      'files',
      new Blob([typeof f.data === 'string' ? f.data : new Uint8Array(f.data)], { type: f.type }),
      f.name,
    );
  return body;
}

async function answer(res: Response): Promise<{ status: number; body: Json }> {
  return { status: res.status, body: (await res.json()) as Json };
}

const chatUpload = (files: Upload[], key = limited) =>
  fetch(`${s.url}/api/chat/file`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form(files),
  }).then(answer);
const connectorUpload = (files: Upload[]) =>
  fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}` },
    body: form(files),
  }).then(answer);

/** The corpus, generated here: the expanded bytes are never held by the test, only their deflated form. */
const paragraph = '<w:p><w:r><w:t>All work and no play makes Jack a dull boy.</w:t></w:r></w:p>';
async function corpus() {
  const bombXml = await deflatedRepeat(paragraph, 2_500_000, DOCUMENT_OPEN, DOCUMENT_CLOSE); // ~200 MB
  return {
    docxBomb: docxWith(bombXml),
    // The same entry declaring 80 KB: the declared-size checks pass, inflating must stop at 80 KB.
    docxLiar: docxWith({ ...bombXml, size: 80_000 }),
    docxNested: docxWith(
      `${DOCUMENT_OPEN}${'<w:p>'.repeat(50_000)}${'</w:p>'.repeat(50_000)}${DOCUMENT_CLOSE}`,
    ),
    pdf10k: trivialPagesPdf(10_000),
    hugeLine: 'x'.repeat(11_000_000),
    binary: Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 256)),
  };
}
let files: Awaited<ReturnType<typeof corpus>>;
beforeAll(async () => {
  files = await corpus();
}, 60_000);

describe('hostile files uploaded to a chat by a limited key', () => {
  const storedFiles = async () =>
    Number(
      (
        await s.running.runtime.deps.db
          .selectFrom('user_files')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  const cases: Array<[string, () => Upload, number, string, RegExp]> = [
    [
      'a DOCX zip bomb (500 KB expanding to 200 MB)',
      () => ({ data: files.docxBomb, type: DOCX_TYPE, name: 'bomb.docx' }),
      413,
      'PAYLOAD_TOO_LARGE',
      /"bomb\.docx" looks like a zip bomb: "word\/document\.xml" expands more than 200 times/,
    ],
    [
      'a DOCX zip bomb whose entry declares 80 KB',
      () => ({ data: files.docxLiar, type: DOCX_TYPE, name: 'liar.docx' }),
      400,
      'INVALID_INPUT',
      /Could not read "liar\.docx": the file is damaged or not a DOCX file \("word\/document\.xml" holds more than its declared size\)/,
    ],
    [
      'a DOCX of 50,000 nested elements',
      () => ({ data: files.docxNested, type: DOCX_TYPE, name: 'deep.docx' }),
      413,
      'PAYLOAD_TOO_LARGE',
      /"deep\.docx" nests XML elements deeper than the limit of 256 levels/,
    ],
    [
      'a PDF of 10,000 pages',
      () => ({ data: files.pdf10k, type: 'application/pdf', name: 'pages.pdf' }),
      413,
      'PAYLOAD_TOO_LARGE',
      /"pages\.pdf" has 10000 pages, more than the limit of 5000 \(KAS_MAX_PDF_PAGES\)/,
    ],
    [
      'a single line of 11 million characters',
      () => ({ data: files.hugeLine, type: 'text/plain', name: 'line.txt' }),
      413,
      'PAYLOAD_TOO_LARGE',
      /"line\.txt" holds more than the limit of 10000000 characters of text \(KAS_MAX_EXTRACTED_CHARS\)/,
    ],
    [
      'binary bytes named .txt',
      () => ({ data: files.binary, type: 'text/plain', name: 'junk.txt' }),
      400,
      'INVALID_INPUT',
      /"junk\.txt" is not UTF-8 text \(nor UTF-16 with a byte-order mark\)/,
    ],
  ];

  it.each(cases)(
    '%s: a clear refusal, health answered, memory bounded',
    async (_, file, status, code, detail) => {
      const before = await storedFiles();
      const watch = await underWatch(() => chatUpload([file()]));
      expect(watch.value.status, JSON.stringify(watch.value.body)).toBe(status);
      expect(watch.value.body).toMatchObject({ error_code: code, detail: expect.stringMatching(detail) });
      expectBounded(watch);
      expect(await storedFiles()).toBe(before);
    },
    120_000,
  );

  it('reads invalid UTF-8 with replacement characters and UTF-16 by its byte-order mark', async () => {
    const utf16 = (bom: number[], text: string, bigEndian = false) => {
      const units = Buffer.from(text, 'utf16le');
      if (bigEndian) units.swap16();
      return Buffer.concat([Buffer.from(bom), units]);
    };
    const res = await chatUpload([
      {
        data: Buffer.from([...Buffer.from('caf'), 0xe9, ...Buffer.from(' au lait, 100 % ok')]),
        type: 'text/plain',
        name: 'latin1.txt',
      },
      { data: utf16([0xff, 0xfe], 'Grüße aus UTF-16 LE'), type: 'text/plain', name: 'le.txt' },
      { data: utf16([0xfe, 0xff], 'Grüße aus UTF-16 BE', true), type: 'text/plain', name: 'be.txt' },
      // An unpaired surrogate (D800) between two words.
      {
        data: Buffer.concat([
          utf16([0xff, 0xfe], 'lone '),
          Buffer.from([0x00, 0xd8]),
          Buffer.from(' surrogate', 'utf16le'),
        ]),
        type: 'text/plain',
        name: 'lone.txt',
      },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const rows = await s.running.runtime.deps.db
      .selectFrom('user_files')
      .select(['name', 'text_content'])
      .where(
        'id',
        'in',
        (res.body.files as Array<{ id: string }>).map((f) => f.id),
      )
      .execute();
    const text = Object.fromEntries(rows.map((r) => [r.name, r.text_content]));
    expect(text).toEqual({
      'latin1.txt': 'caf\uFFFD au lait, 100 % ok',
      'le.txt': 'Grüße aus UTF-16 LE',
      'be.txt': 'Grüße aus UTF-16 BE',
      'lone.txt': 'lone \uFFFD surrogate',
    });
  });
});

async function json(res: Response, status = 200): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as Json;
}

async function pairFor(source: string, config: Json) {
  const name = `${source} ${Math.random().toString(36).slice(2, 8)}`;
  const connector = await json(
    await s.request('POST', '/api/manage/admin/connector', {
      key: s.adminKey,
      body: {
        name,
        source,
        input_type: 'load_state',
        access_type: 'public',
        connector_specific_config: config,
      },
    }),
  );
  const cred = await json(
    await s.request('POST', '/api/manage/credential', {
      key: s.adminKey,
      body: { source, credential_json: {} },
    }),
  );
  const pair = await json(
    await s.request('PUT', `/api/manage/connector/${connector.id}/credential/${cred.id}`, {
      key: s.adminKey,
      body: { name, access_type: 'public' },
    }),
  );
  return pair.data as number;
}

async function indexed(pairId: number): Promise<Json> {
  for (let i = 0; i < 1200; i++) {
    const details = await json(
      await s.request('GET', `/api/manage/admin/cc-pair/${pairId}`, { key: s.adminKey }),
    );
    const done = ['success', 'completed_with_errors', 'failed', 'canceled'];
    if (done.includes(details.last_index_attempt_status) && !details.indexing) return details;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`pair ${pairId} was not indexed`);
}

async function search(query: string): Promise<Json[]> {
  const res = await s.request('POST', '/api/admin/search', { key: s.adminKey, body: { query, filters: {} } });
  return (await json(res)).documents as Json[];
}

describe('hostile files in connectors', () => {
  it('a connector zip bomb is refused from its declared sizes, and a zip lying about them while inflating', async () => {
    const entry = await deflatedRepeat('zip bomb line of text\n', 7_000_000); // ~150 MB each
    const honest = zip([
      { name: 'a.txt', ...entry },
      { name: 'b.txt', ...entry },
    ]);
    const liar = zip([
      { name: 'a.txt', ...entry, size: 1000 },
      { name: 'b.txt', ...entry, size: 1000 },
    ]);
    const refused = await underWatch(() =>
      connectorUpload([{ data: honest, type: 'application/zip', name: 'bomb.zip' }]),
    );
    expect(refused.value).toMatchObject({
      status: 413,
      body: {
        error_code: 'PAYLOAD_TOO_LARGE',
        detail: '"bomb.zip" expands to more than the limit of 100 MB (KAS_MAX_UNZIPPED_MB)',
      },
    });
    expectBounded(refused);
    const lied = await underWatch(() =>
      connectorUpload([{ data: liar, type: 'application/zip', name: 'liar.zip' }]),
    );
    expect(lied.value).toMatchObject({
      status: 400,
      body: {
        error_code: 'INVALID_INPUT',
        detail: expect.stringContaining('holds more than its declared size'),
      },
    });
    expectBounded(lied);
  }, 120_000);

  it('a file connector indexes the good file and lists each hostile one as a per-document error naming the limit', async () => {
    const upload = await connectorUpload([
      { data: files.pdf10k, type: 'application/pdf', name: 'pages.pdf' },
      { data: files.docxBomb, type: DOCX_TYPE, name: 'bomb.docx' },
      { data: files.docxNested, type: DOCX_TYPE, name: 'deep.docx' },
      { data: files.hugeLine, type: 'text/plain', name: 'line.txt' },
      { data: 'The quokka census counted 12,000 quokkas.', type: 'text/plain', name: 'quokka.txt' },
    ]);
    expect(upload.status, JSON.stringify(upload.body)).toBe(200);
    const watch = await underWatch(async () => {
      const pairId = await pairFor('file', {
        file_locations: upload.body.file_paths,
        file_names: upload.body.file_names,
      });
      return { pairId, details: await indexed(pairId) };
    });
    // Twice the bound: the embedded database runs on this thread and reads the 11 MB upload back.
    expectBounded(watch, 2 * HEALTH_BOUND_MS);
    const { pairId, details } = watch.value;
    expect(details).toMatchObject({
      last_index_attempt_status: 'completed_with_errors',
      num_docs_indexed: 1,
    });
    expect((await search('quokka census'))[0]?.semantic_identifier).toBe('quokka.txt');
    const errors = await json(
      await s.request('GET', `/api/manage/admin/cc-pair/${pairId}/errors?page_size=10`, { key: s.adminKey }),
    );
    const messages = (errors.items as Array<{ failure_message: string }>)
      .map((e) => e.failure_message)
      .sort();
    expect(messages).toEqual([
      expect.stringMatching(/^Could not read "bomb\.docx": .*looks like a zip bomb/),
      expect.stringMatching(/^Could not read "deep\.docx": .*deeper than the limit of 256 levels/),
      expect.stringMatching(/^Could not read "line\.txt": .*\(KAS_MAX_EXTRACTED_CHARS\)/),
      expect.stringMatching(/^Could not read "pages\.pdf": .*\(KAS_MAX_PDF_PAGES\)/),
    ]);
  }, 180_000);

  it('a crawl lists a PDF over the page limit as a per-document error and indexes the rest', async () => {
    site.files.set('/manual.pdf', { type: 'application/pdf', body: files.pdf10k });
    site.files.set('/flyer.pdf', { type: 'application/pdf', body: trivialPagesPdf(3) });
    site.pages.set(
      '/',
      '<html><head><title>Docs</title></head><body><p>The numbat handbook.</p><a href="/manual.pdf">m</a><a href="/flyer.pdf">f</a></body></html>',
    );
    const watch = await underWatch(async () => {
      const pairId = await pairFor('web', { base_url: site.url, web_connector_type: 'recursive' });
      return { pairId, details: await indexed(pairId) };
    });
    expectBounded(watch);
    const { pairId, details } = watch.value;
    expect(details).toMatchObject({
      last_index_attempt_status: 'completed_with_errors',
      num_docs_indexed: 2,
    });
    const errors = await json(
      await s.request('GET', `/api/manage/admin/cc-pair/${pairId}/errors?page_size=10`, { key: s.adminKey }),
    );
    expect(errors.items).toEqual([
      expect.objectContaining({
        document_id: `${site.url}/manual.pdf`,
        failure_message: expect.stringMatching(
          /^Unreadable PDF: .*10000 pages, more than the limit of 5000 \(KAS_MAX_PDF_PAGES\)$/,
        ),
      }),
    ]);
    site.files.clear();
  }, 180_000);

  it('a crawled page of 16 MB is parsed off the event loop and indexed', async () => {
    // Markup-heavy: 16 MB of elements around one sentence, so that the cost is parsing, not indexing text.
    const filler = '<span class="c"><i></i></span>'.repeat(550_000);
    site.pages.set(
      '/',
      `<html><head><title>Heavy page</title></head><body><p>The wombat registry lives here.</p>${filler}</body></html>`,
    );
    const watch = await underWatch(async () => {
      const pairId = await pairFor('web', { base_url: site.url, web_connector_type: 'single' });
      return indexed(pairId);
    });
    expect(watch.value).toMatchObject({ last_index_attempt_status: 'success', num_docs_indexed: 1 });
    expectBounded(watch);
    expect((await search('wombat registry'))[0]?.semantic_identifier).toBe('Heavy page');
  }, 180_000);
});
