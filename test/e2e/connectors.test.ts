import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    worker: true,
    env: { KAS_OUTBOUND_ALLOWLIST: '127.0.0.1', KAS_CONNECTOR_HEARTBEAT_MS: '200' },
  });
});
afterAll(async () => {
  await s.close();
});

describe('connectors over HTTP with the worker running', () => {
  it('runs the web connector example: a local site indexed end to end with progress, searched, deleted', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'examples/web-connector.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(stdout).toContain('finished: success, 20 pages indexed');
    expect(stdout).toContain('Handbook page 7');
  }, 60_000);

  it('answers the spec paths with their statuses and error bodies', async () => {
    const bad = await s.request('POST', '/api/manage/admin/connector', {
      key: s.adminKey,
      body: {
        name: 'x',
        source: 'web',
        input_type: 'poll',
        access_type: 'public',
        connector_specific_config: {},
        refresh_freq: 5,
      },
    });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error_code: string; detail: string };
    expect(body.error_code).toBe('INVALID_INPUT');
    expect(body.detail).toContain('connector_specific_config.base_url');
    expect(body.detail).toContain('refresh_freq');
    expect((await s.request('GET', '/api/manage/admin/cc-pair/999999', { key: s.adminKey })).status).toBe(
      404,
    );
    expect((await s.request('GET', '/api/manage/admin/connector')).status).toBe(401);
    const basic = await s.createKey('basic');
    expect((await s.request('GET', '/api/manage/admin/connector', { key: basic.key })).status).toBe(403);
    const status = await s.request('GET', '/api/manage/admin/connector/indexing-status', { key: s.adminKey });
    expect(status.status).toBe(200);
    const attempts = await s.request(
      'GET',
      '/api/manage/admin/cc-pair/999999/index-attempts?page_num=0&page_size=5',
      {
        key: s.adminKey,
      },
    );
    expect(attempts.status).toBe(404);
  });
});
