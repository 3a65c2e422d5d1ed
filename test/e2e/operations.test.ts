import { Writable } from 'node:stream';
import { configFrom, createLogger } from '@kas/server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { quietPort } from '../harness/net.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

/** A JSON logger at `level` whose lines the test reads. */
function capturedLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger(configFrom({ KAS_LOG_LEVEL: level, KAS_LOG_FORMAT: 'json' }), stream);
  return { logger, lines };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('request log', () => {
  const log = capturedLogger('info');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ logger: log.logger });
  });
  afterAll(() => server.close());

  it('writes one info line per request with method, route, status, duration, caller and request id', async () => {
    const basic = await server.createKey('basic');
    const res = await server.request('GET', '/api/persona/0?x=1', {
      key: basic.key,
      headers: { 'x-request-id': 'trace-42.abc' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('trace-42.abc');
    // The request log gathers its lines for a moment before writing them.
    const line = await vi.waitFor(() => {
      const found = log.lines.find((l) => l.msg === 'request' && l.req_id === 'trace-42.abc');
      if (!found) throw new Error('no request line yet');
      return found;
    });
    expect(line).toMatchObject({
      level: 30,
      method: 'GET',
      path: '/api/persona/0',
      route: '/api/persona/:persona_id',
      status: 200,
      actor: basic.user_id,
      api_key_id: basic.api_key_id,
    });
    expect(line?.ms).toEqual(expect.any(Number));
  });

  it('replaces an unsafe or overlong X-Request-Id with its own, and logs refusals too', async () => {
    for (const sent of ['bad id\twith tab', 'x'.repeat(129), '<script>']) {
      const res = await server.request('GET', '/api/me', { headers: { 'x-request-id': sent } });
      expect(res.status).toBe(401);
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      await vi.waitFor(() =>
        expect(log.lines.find((l) => l.req_id === id)).toMatchObject({ status: 401, method: 'GET' }),
      );
      expect(JSON.stringify(log.lines)).not.toContain('<script>');
    }
    const generated = await server.request('GET', '/api/health');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('request log at warn', () => {
  const log = capturedLogger('warn');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ logger: log.logger });
  });
  afterAll(() => server.close());

  it('is silent, and the request id is still echoed', async () => {
    const res = await server.request('GET', '/api/health', { headers: { 'x-request-id': 'r1' } });
    expect(res.headers.get('x-request-id')).toBe('r1');
    await settle();
    expect(log.lines.filter((l) => l.msg === 'request')).toEqual([]);
  });
});

describe('mistakes in search filters', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('refuses a misspelt filter key in admin search and in chat, naming it and the closest filter', async () => {
    const search = await server.request('POST', '/api/admin/search', {
      key: server.adminKey,
      body: { query: 'anything', filters: { sorce_type: ['web'] } },
    });
    expect(search.status).toBe(422);
    expect(await search.json()).toEqual({
      error_code: 'VALIDATION_ERROR',
      detail:
        'filters: unknown filter "sorce_type" (did you mean source_type?); the filters are source_type, document_set, time_cutoff, tags',
    });
    const chat = await server.request('POST', '/api/chat/send-chat-message', {
      key: server.adminKey,
      body: {
        message: 'hello',
        chat_session_info: {},
        stream: false,
        internal_search_filters: { document_sets: ['Sales'] },
      },
    });
    expect(chat.status).toBe(422);
    expect((await chat.json()).detail).toMatch(
      /internal_search_filters: unknown filter "document_sets" \(did you mean document_set\?\)/,
    );
    // The filters that exist are still accepted.
    const fine = await server.request('POST', '/api/admin/search', {
      key: server.adminKey,
      body: { query: 'anything', filters: { source_type: ['web'], tags: [], time_cutoff: null } },
    });
    expect(fine.status).toBe(200);
  });

  it('refuses an unknown document set in admin search, naming it', async () => {
    const res = await server.request('POST', '/api/admin/search', {
      key: server.adminKey,
      body: { query: 'anything', filters: { document_set: ['Salse'] } },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error_code: 'INVALID_INPUT',
      detail: expect.stringMatching(/^No document set named "Salse" among the sets you can search/),
    });
  });
});

describe('failures of the services kas calls are logged with the endpoint and the real cause', () => {
  const log = capturedLogger('info');
  let server: TestServer;
  let closedPort: number;
  beforeAll(async () => {
    closedPort = await quietPort(); // stays closed for the whole block
    server = await startTestServer({
      logger: log.logger,
      env: {
        KAS_LLM_PROVIDER: 'openai',
        KAS_LLM_BASE_URL: `http://127.0.0.1:${closedPort}/v1`,
        KAS_LLM_API_KEY: 'sk-secret-llm-key',
        KAS_EMBEDDING_BASE_URL: `http://127.0.0.1:${closedPort}`,
        KAS_EMBEDDING_API_KEY: 'sk-secret-embedding-key',
        KAS_OIDC_ISSUER: `http://127.0.0.1:${closedPort}/realms/corp`,
        KAS_OIDC_AUDIENCE: 'kas',
      },
    });
  });
  afterAll(() => server.close());

  it('a model provider that cannot be reached', async () => {
    await server.request('POST', '/api/chat/send-chat-message', {
      key: server.adminKey,
      body: { message: 'hello', chat_session_info: {}, stream: false },
    });
    await settle();
    const line = log.lines.find((l) => l.msg === 'model provider request failed');
    expect(line).toMatchObject({
      level: 40,
      provider: 'openai',
      endpoint: `http://127.0.0.1:${closedPort}/v1`,
      model: 'gpt-4o-mini',
      cause: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('an embedding server that cannot be reached', async () => {
    await server.request('POST', '/api/admin/search', {
      key: server.adminKey,
      body: { query: 'anything', filters: {} },
    });
    await settle();
    expect(log.lines.find((l) => String(l.msg).startsWith('embedding request failed'))).toMatchObject({
      level: 40,
      endpoint: `http://127.0.0.1:${closedPort}/v1/embeddings`,
      cause: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('an OIDC issuer the outbound guard refuses, named as such', async () => {
    const jwt = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"sub":"a"}').toString('base64url')}.c2ln`;
    const res = await server.request('GET', '/api/me', { key: jwt });
    expect(res.status).toBe(503);
    expect((await res.json()).detail).toMatch(/outbound guard refuses.*KAS_OUTBOUND_ALLOWLIST/);
    await settle();
    expect(log.lines.find((l) => l.msg === 'OIDC issuer failed')).toMatchObject({
      level: 40,
      endpoint: `http://127.0.0.1:${closedPort}/realms/corp/.well-known/openid-configuration`,
      cause: expect.stringMatching(/Refused to connect to 127\.0\.0\.1.*KAS_OUTBOUND_ALLOWLIST/),
    });
    expect(log.lines.find((l) => l.msg === 'outbound request failed')).toMatchObject({
      method: 'GET',
      endpoint: `http://127.0.0.1:${closedPort}/realms/corp/.well-known/openid-configuration`,
      code: 'BLOCKED_ADDRESS',
    });
  });

  it('never logs a key', () => {
    const text = JSON.stringify(log.lines);
    expect(text).not.toContain('sk-secret');
    expect(text).not.toContain(server.adminKey);
  });
});
