import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Multipart uploads (`/api/chat/file`, the connector file upload) authenticate and authorise the
// caller before reading a byte of the body, then cap the body as a whole, each file and text fields.
let s: TestServer;
let limitedKey: string;
let basicKey: string;
beforeAll(async () => {
  s = await startTestServer({
    env: {
      KAS_MAX_UPLOAD_MB: '1',
      KAS_MAX_UPLOAD_REQUEST_MB: '2',
      KAS_MAX_UPLOAD_FIELDS: '2',
      KAS_MAX_UPLOAD_FIELD_KB: '1',
    },
  });
  limitedKey = (await s.createKey('limited')).key;
  basicKey = (await s.createKey('basic')).key;
});
afterAll(async () => {
  await s?.close();
});

/**
 * Sends the headers of a `declared`-byte multipart body and only its first kilobyte, then waits for the
 * answer: a server that read the body before answering would wait for the rest (answer `null`).
 */
function answerBeforeBody(path: string, declared: number, key?: string) {
  return new Promise<{ status: number; body: string } | null>((resolve, reject) => {
    const url = new URL(path, s.url);
    const req = httpRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'multipart/form-data; boundary=xyz',
        'content-length': String(declared),
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve(null);
    }, 5000);
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.write(
      `--xyz\r\ncontent-disposition: form-data; name="files"; filename="a.txt"\r\n\r\n${'x'.repeat(1000)}`,
    );
  });
}

/** Sends `size` bytes of a multipart body chunked (no Content-Length) and answers the response. */
function chunkedUpload(path: string, size: number, key: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(new URL(path, s.url), {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz', authorization: `Bearer ${key}` },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    const part = (i: number) =>
      `--xyz\r\ncontent-disposition: form-data; name="files"; filename="${i}.txt"\r\n\r\n${'x'.repeat(500_000)}\r\n`;
    let sent = 0;
    const write = (): void => {
      while (sent < size && !req.destroyed) {
        const chunk = part(sent);
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', write);
          return;
        }
      }
      if (!req.destroyed) req.end('--xyz--\r\n');
    };
    write();
  });
}

function form(fields: Record<string, string>, files: { name: string; size: number }[]): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  for (const f of files) body.append('files', new Blob(['x'.repeat(f.size)], { type: 'text/plain' }), f.name);
  return body;
}

const post = (path: string, body: FormData, key = basicKey) =>
  fetch(`${s.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body });

describe('multipart uploads', () => {
  it('answers a caller without a valid key (401) before reading the body', async () => {
    for (const path of ['/api/chat/file', '/api/manage/admin/connector/file/upload']) {
      const answer = await answerBeforeBody(path, 50 * 1024 * 1024);
      expect(answer?.status).toBe(401);
      expect(JSON.parse(answer?.body ?? '{}').error_code).toBe('UNAUTHENTICATED');
      expect((await answerBeforeBody(path, 50 * 1024 * 1024, 'svck-not-a-key'))?.status).toBe(401);
    }
  });

  it("answers a caller without the procedure's role (403) before reading the body", async () => {
    const answer = await answerBeforeBody(
      '/api/manage/admin/connector/file/upload',
      50 * 1024 * 1024,
      basicKey,
    );
    expect(answer?.status).toBe(403);
    expect(JSON.parse(answer?.body ?? '{}').error_code).toBe('INSUFFICIENT_PERMISSIONS');
  });

  it('refuses a body declared over KAS_MAX_UPLOAD_REQUEST_MB before reading it (413 naming the limit)', async () => {
    const answer = await answerBeforeBody('/api/chat/file', 50 * 1024 * 1024, limitedKey);
    expect(answer?.status).toBe(413);
    expect(JSON.parse(answer?.body ?? '{}')).toEqual({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: expect.stringContaining('KAS_MAX_UPLOAD_REQUEST_MB'),
    });
  });

  it('caps the request as a whole, each file, and the count and size of text fields (413 with the envelope)', async () => {
    // Chunked, without a Content-Length: the bytes are counted as they arrive (files within the
    // per-file cap, 2.5 MB in all).
    const whole = await chunkedUpload('/api/chat/file', 2_500_000, limitedKey);
    expect(whole.status).toBe(413);
    expect(JSON.parse(whole.body).detail).toMatch(/KAS_MAX_UPLOAD_REQUEST_MB/);
    const file = await post('/api/chat/file', form({}, [{ name: 'big.txt', size: 1_100_000 }]));
    expect(file.status).toBe(413);
    expect((await file.json()).detail).toMatch(/KAS_MAX_UPLOAD_MB/);
    const many = await post(
      '/api/chat/file',
      form({ a: '1', b: '2', c: '3' }, [{ name: 'a.txt', size: 10 }]),
    );
    expect(many.status).toBe(413);
    expect(await many.json()).toEqual({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: expect.stringMatching(/text fields/),
    });
    const long = await post('/api/chat/file', form({ a: 'y'.repeat(2000) }, [{ name: 'a.txt', size: 10 }]));
    expect(long.status).toBe(413);
    expect((await long.json()).detail).toMatch(/text field/);
    // Within every cap the upload is stored.
    const ok = await post('/api/chat/file', form({ a: '1' }, [{ name: 'a.txt', size: 10 }]));
    expect(ok.status).toBe(200);
  });
});
