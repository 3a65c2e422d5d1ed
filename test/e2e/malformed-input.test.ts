import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

/** A raw request: fetch would refuse some of these (bad paths) or fix them up (encodings). */
function raw(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: Buffer | string } = {},
): Promise<{ status: number; body: string }> {
  const url = new URL(s.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path, headers: options.headers },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function expectEnvelope(answer: { status: number; body: string }, status?: number) {
  expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
  expect(answer.status, answer.body).toBeLessThan(500);
  if (status) expect(answer.status, answer.body).toBe(status);
  expect(Object.keys(JSON.parse(answer.body)).sort()).toEqual(['detail', 'error_code']);
}

describe('malformed input is a 4xx with the error envelope, never a 500', () => {
  const auth = () => ({ authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' });
  const doc = (over: Record<string, unknown> = {}) =>
    JSON.stringify({ document: { semantic_identifier: 'x', sections: [{ text: 'hello' }], ...over } });

  it('corrupt Content-Encoding, even unauthenticated', async () => {
    const corrupt = Buffer.from('this is not gzip at all');
    for (const encoding of ['gzip', 'br', 'deflate']) {
      expectEnvelope(
        await raw('POST', '/api/svc-api/ingestion', {
          headers: { ...auth(), 'content-encoding': encoding },
          body: corrupt,
        }),
      );
      expectEnvelope(
        await raw('POST', '/api/chat/create-chat-session', {
          headers: { 'content-type': 'application/json', 'content-encoding': encoding },
          body: corrupt,
        }),
      );
    }
    const good = await raw('POST', '/api/svc-api/ingestion', {
      headers: { ...auth(), 'content-encoding': 'gzip' },
      body: gzipSync(doc()),
    });
    expect(good.status, good.body).toBe(200);
  });

  it('NUL characters in a body field, a path and a query', async () => {
    expectEnvelope(
      await raw('POST', '/api/svc-api/ingestion', {
        headers: auth(),
        body: doc({ semantic_identifier: 'a\u0000b' }),
      }),
    );
    expectEnvelope(await raw('GET', '/api/svc-api/ingestion/abc%00def', { headers: auth() }));
    expectEnvelope(await raw('GET', '/api/persona/1?include_deleted=%00', { headers: auth() }));
    expectEnvelope(await raw('GET', '/api/chat/search?query=a%00b', { headers: auth() }));
  });

  it('invalid percent-encoding in a path parameter', async () => {
    expectEnvelope(await raw('GET', '/api/svc-api/ingestion/%ff%fe', { headers: auth() }));
    expectEnvelope(await raw('DELETE', '/api/svc-api/ingestion/%E0%A4%A', { headers: auth() }));
  });

  it('integers beyond the database column in a body, a path and a query', async () => {
    expectEnvelope(await raw('GET', '/api/persona/2147483648', { headers: auth() }));
    expectEnvelope(await raw('GET', '/api/svc-api/connector-docs/99999999999', { headers: auth() }));
    expectEnvelope(
      await raw('POST', '/api/svc-api/ingestion', {
        headers: auth(),
        body: JSON.stringify({ cc_pair_id: 2147483648, document: JSON.parse(doc()).document }),
      }),
    );
    expectEnvelope(await raw('GET', '/api/admin/agents?page_num=2147483648', { headers: auth() }));
  });

  it('a 1 MB value in an indexed field', async () => {
    const big = 'm'.repeat(1_000_000);
    expectEnvelope(
      await raw('POST', '/api/svc-api/ingestion', {
        headers: auth(),
        body: doc({ metadata: { team: big } }),
      }),
    );
    expectEnvelope(await raw('POST', '/api/svc-api/ingestion', { headers: auth(), body: doc({ id: big }) }));
  });

  it('TRACE on /api/trpc', async () => {
    expectEnvelope(await raw('TRACE', '/api/trpc/health.check', { headers: auth() }));
  });

  it('a URL or headers over 16 KB: 431 with the envelope, read by the client rather than a reset', async () => {
    for (const length of [20_000, 70_000, 1_000_000]) {
      const answer = await raw('GET', `/api/admin/api-key?q=${'b'.repeat(length)}`, { headers: auth() });
      expectEnvelope({ ...answer, status: answer.status === 431 ? 400 : answer.status });
      expect(answer.status).toBe(431);
      expect(JSON.parse(answer.body).error_code).toBe('HEADERS_TOO_LARGE');
    }
    const header = await raw('GET', '/api/health', { headers: { 'x-big': 'h'.repeat(40_000) } });
    expect(header.status).toBe(431);
    expect(JSON.parse(header.body).error_code).toBe('HEADERS_TOO_LARGE');
    const garbage = await new Promise<string>((resolve, reject) => {
      const url = new URL(s.url);
      const socket = connect(Number(url.port), url.hostname, () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4)).error_code).toBe('BAD_REQUEST');
  });
});
