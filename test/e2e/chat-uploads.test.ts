import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../fakes/openai.ts';
import { DOCX_TYPE, minimalDocx, minimalPdf } from '../harness/office-files.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { answerOf, readAll } from './chat-helpers.ts';

type Descriptor = { id: string; type: string; name: string };

describe('chat uploads: PDF and DOCX reach the model; bad files are refused cleanly', () => {
  let fake: FakeLlmServer;
  let s: TestServer;
  let key: string;
  let userId: string;

  beforeAll(async () => {
    fake = await startFakeOpenAi();
    s = await startTestServer({
      env: {
        ...fakeOpenAiEnv(fake),
      },
    });
    ({ key, user_id: userId } = await s.createKey('basic', 'uploader'));
  });
  afterAll(async () => {
    await s?.close();
    await fake?.close();
  });

  const upload = (files: Array<{ data: Buffer | string; type: string; name: string }>, field = 'files') => {
    const form = new FormData();
    for (const f of files)
      form.append(
        field,
        new Blob([typeof f.data === 'string' ? f.data : new Uint8Array(f.data)], { type: f.type }),
        f.name,
      );
    return fetch(`${s.url}/api/chat/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
  };
  const storedFiles = async () =>
    Number(
      (
        await s.running.runtime.deps.db
          .selectFrom('user_files')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  /** Asks with the files attached; returns the last user message the model received. */
  const askWith = async (files: Descriptor[], message = 'What do the files say?') => {
    fake.enqueue({ tokens: ['read'] });
    const res = await s.request('POST', '/api/chat/send-chat-message', {
      key,
      body: { message, chat_session_info: {}, file_descriptors: files },
    });
    expect(res.status).toBe(200);
    const lines = await readAll(res);
    expect(answerOf(lines)).toBe('read');
    const messages = fake.requests.at(-1)!.messages as Array<{ role: string; content: string }>;
    return { lines, last: messages.at(-1)! };
  };

  const pdf = minimalPdf(['The reactor code is HELIUM-55.', 'Keep it (strictly) secret.']);
  const docx = minimalDocx(['The vault code is COBALT-19.', 'Second paragraph & more.']);

  it('a file holding one 300 KB word is read in linear time while other requests are answered', async () => {
    const started = Date.now();
    const uploading = upload([
      { data: `start ${'z'.repeat(300_000)} end`, type: 'text/plain', name: 'blob.txt' },
    ]);
    const health = await fetch(`${s.url}/api/health`);
    expect(health.status).toBe(200);
    const res = await uploading;
    expect(res.status).toBe(200);
    // Tokenising the word whole was quadratic (~50 s, the event loop blocked throughout).
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('reads a PDF and gives its text to the model', async () => {
    const res = await upload([{ data: pdf, type: 'application/pdf', name: 'reactor.pdf' }]);
    expect(res.status).toBe(200);
    const { files } = (await res.json()) as { files: Descriptor[] };
    expect(files).toEqual([{ id: expect.any(String), type: 'document', name: 'reactor.pdf' }]);
    const { last, lines } = await askWith(files);
    expect(last.role).toBe('user');
    expect(last.content).toContain('--- Attached file: reactor.pdf ---');
    expect(last.content).toContain('The reactor code is HELIUM-55.');
    expect(last.content).toContain('Keep it (strictly) secret.');
    // The descriptor is kept on the user message.
    const session = await (
      await s.request('GET', `/api/chat/get-chat-session/${lines[0]!.chat_session_id}`, { key })
    ).json();
    const question = session.messages.find((m: { message_type: string }) => m.message_type === 'user');
    expect(question.files).toEqual(files);
  });

  it('reads a DOCX (by its type or by its extension) and gives its text to the model', async () => {
    for (const type of [DOCX_TYPE, 'application/octet-stream']) {
      const res = await upload([{ data: docx, type, name: 'vault.docx' }]);
      expect(res.status).toBe(200);
      const { files } = (await res.json()) as { files: Descriptor[] };
      expect(files).toEqual([{ id: expect.any(String), type: 'document', name: 'vault.docx' }]);
      const { last } = await askWith(files);
      expect(last.content).toContain('--- Attached file: vault.docx ---');
      expect(last.content).toContain('The vault code is COBALT-19.');
      expect(last.content).toContain('Second paragraph & more.');
    }
  });

  it('takes several files in one upload, in order', async () => {
    const res = await upload([
      { data: pdf, type: 'application/pdf', name: 'a.pdf' },
      { data: docx, type: DOCX_TYPE, name: 'b.docx' },
      { data: 'Plain note: MANGO-4.', type: 'text/plain', name: 'c.txt' },
    ]);
    expect(res.status).toBe(200);
    const { files } = (await res.json()) as { files: Descriptor[] };
    expect(files.map((f) => [f.name, f.type])).toEqual([
      ['a.pdf', 'document'],
      ['b.docx', 'document'],
      ['c.txt', 'plain_text'],
    ]);
    const { last } = await askWith(files);
    const at = (text: string) => last.content.indexOf(text);
    expect(at('HELIUM-55')).toBeGreaterThan(0);
    expect(at('COBALT-19')).toBeGreaterThan(at('HELIUM-55'));
    expect(at('MANGO-4')).toBeGreaterThan(at('COBALT-19'));
  });

  it('refuses bad, unsupported, empty and oversized files with {error_code, detail}, storing nothing', async () => {
    const before = await storedFiles();
    const cases: Array<
      [string, Array<{ data: Buffer | string; type: string; name: string }>, number, string, RegExp]
    > = [
      [
        'damaged PDF',
        [{ data: '%PDF-1.4\nthis is not really a pdf', type: 'application/pdf', name: 'broken.pdf' }],
        400,
        'INVALID_INPUT',
        /broken\.pdf.*damaged or not a PDF/,
      ],
      [
        'DOCX that is not a zip',
        [{ data: 'just text', type: DOCX_TYPE, name: 'fake.docx' }],
        400,
        'INVALID_INPUT',
        /fake\.docx.*damaged or not a DOCX/,
      ],
      [
        'image',
        [{ data: Buffer.from([0x89, 0x50, 0x4e, 0x47]), type: 'image/png', name: 'pic.png' }],
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        /pic\.png.*PDF or DOCX/,
      ],
      [
        'empty file',
        [{ data: '', type: 'text/plain', name: 'empty.txt' }],
        400,
        'INVALID_INPUT',
        /empty\.txt.*empty/,
      ],
      [
        'PDF without text',
        [{ data: minimalPdf([]), type: 'application/pdf', name: 'scan.pdf' }],
        400,
        'INVALID_INPUT',
        /scan\.pdf.*no readable text/,
      ],
      [
        'a good file next to a bad one',
        [
          { data: docx, type: DOCX_TYPE, name: 'good.docx' },
          { data: Buffer.from([1, 2, 3]), type: 'application/zip', name: 'archive.zip' },
        ],
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        /archive\.zip/,
      ],
      [
        'oversized file',
        [{ data: Buffer.alloc(20 * 1024 * 1024 + 1, 0x61), type: 'text/plain', name: 'huge.txt' }],
        413,
        'PAYLOAD_TOO_LARGE',
        /20 MB/,
      ],
      ['no file at all', [], 400, 'INVALID_INPUT', /No files/],
    ];
    for (const [label, files, status, code, detail] of cases) {
      const res = await upload(files);
      const body = await res.json();
      expect([label, res.status, body]).toEqual([
        label,
        status,
        { error_code: code, detail: expect.any(String) },
      ]);
      expect([label, body.detail]).toEqual([label, expect.stringMatching(detail)]);
    }
    const wrongField = await upload([{ data: 'x', type: 'text/plain', name: 'x.txt' }], 'file');
    expect([wrongField.status, await wrongField.json()]).toEqual([
      422,
      { error_code: 'VALIDATION_ERROR', detail: expect.stringContaining('"files"') },
    ]);
    expect(await storedFiles()).toBe(before);

    // Nothing was lost: earlier uploads still attach, and new ones still work.
    const again = await upload([{ data: pdf, type: 'application/pdf', name: 'after.pdf' }]);
    expect(again.status).toBe(200);
    const { files } = (await again.json()) as { files: Descriptor[] };
    expect(await storedFiles()).toBe(before + 1);
    const { last } = await askWith(files);
    expect(last.content).toContain('HELIUM-55');
  });
});
