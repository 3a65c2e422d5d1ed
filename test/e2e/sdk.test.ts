import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiError, createKasClient } from '@kas/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiArtifacts } from '../../scripts/api-artifacts.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

describe('SDK', () => {
  it('the committed OpenAPI document and SDK types match the procedures', async () => {
    const artifacts = await buildApiArtifacts();
    for (const [path, content] of Object.entries(artifacts)) {
      expect(readFileSync(join(root, path), 'utf8'), `${path} drifted: run npm run generate`).toBe(content);
    }
  });

  it('runs the API key example against a live server', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'examples/api-keys.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(stdout).toContain('OK');
  });

  it('runs the agents example: create, share with a group, list as member and outsider', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'examples/agents.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(stdout).toContain('OK');
  });

  it('runs the documents example: ingest a folder of Markdown, update, search with filters, delete', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'examples/documents.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(stdout).toContain('OK');
  });

  it('runs the chat example: streamed (REST and tRPC) and whole cited answers', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'examples/chat.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(stdout).toContain('OK');
  });

  it('the example exits non-zero when something is wrong', async () => {
    const basic = await s.createKey('basic');
    const failure = await run(process.execPath, [join(root, 'examples/api-keys.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: basic.key },
    }).catch((error: { code: number }) => error);
    expect((failure as { code: number }).code).not.toBe(0);
  });

  it('maps REST errors to ApiError with status, error_code and detail', async () => {
    const kas = createKasClient({ baseUrl: s.url, apiKey: 'svck-wrong' });
    const error = await kas.apiKeys.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 401, error_code: 'UNAUTHENTICATED' });
  });

  it('offers the typed tRPC client with the same errors', async () => {
    const admin = createKasClient({ baseUrl: s.url, apiKey: s.adminKey });
    const keys = await admin.call((trpc) => trpc.apiKeys.list.query({}));
    expect(keys.length).toBeGreaterThan(0);
    const created = await admin.call((trpc) =>
      trpc.apiKeys.create.mutate({ role: 'basic', name: 'via trpc' }),
    );
    expect(created.api_key).toMatch(/^svck-/);
    const basic = createKasClient({ baseUrl: s.url, apiKey: created.api_key });
    const error = await basic.call((trpc) => trpc.apiKeys.list.query({})).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
    const missing = await admin
      .call((trpc) => trpc.apiKeys.delete.mutate({ api_key_id: 987654 }))
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, error_code: 'API_KEY_NOT_FOUND' });
  });
});
