import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, serve, stop, stopAllProcesses, tempDir } from '../harness/process.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'packages/rest-bridge/src/cli.ts');
const run = promisify(execFile);
const KEY = `svck-${'b'.repeat(43)}`;

afterAll(stopAllProcesses);

async function call(url: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, `${method} ${path}`).toBeLessThan(300);
  return res.json() as Promise<Record<string, any>>;
}

describe('kas backup and kas restore', () => {
  it('round-trips keys, chats, agents and documents from a running service into an empty directory', async () => {
    const source = tempDir();
    const env = { KAS_DATA_DIR: source, KAS_BOOTSTRAP_ADMIN_KEY: KEY };
    const running = await serve(env, 20_000);
    const basic = await call(running.url, 'POST', '/api/admin/api-key', KEY, { name: 'kept', role: 'basic' });
    await call(running.url, 'POST', '/api/svc-api/ingestion', KEY, {
      document: {
        id: 'zeppelin',
        semantic_identifier: 'Zeppelin handbook',
        sections: [{ text: 'Zeppelins float on hydrogen.' }],
      },
    });
    const { chat_session_id } = await call(
      running.url,
      'POST',
      '/api/chat/create-chat-session',
      basic.api_key,
      {
        description: 'kept chat',
      },
    );
    const agent = await call(running.url, 'POST', '/api/persona', KEY, {
      name: 'Kept agent',
      description: 'survives a restore',
      system_prompt: '',
      task_prompt: '',
      datetime_aware: false,
      is_public: true,
      document_set_ids: [],
      tool_ids: [],
    });

    const file = join(tempDir(), 'kas.backup');
    const backedUp = await run(process.execPath, [cli, 'backup', file, '--url', running.url], {
      env: cleanEnv({ KAS_DATA_DIR: source, KAS_API_KEY: KEY }),
    });
    expect(backedUp.stdout).toMatch(/Wrote .*does not hold the encryption key/);
    expect(await stop(running.child)).toBe(0);
    // The backup leaves the key out: the operator keeps a copy of it apart.
    const keyFile = join(source, 'encryption.key');
    expect(readFileSync(file).includes(readFileSync(keyFile, 'utf8').trim())).toBe(false);

    const target = tempDir();
    const keyless = await run(process.execPath, [cli, 'restore', file], {
      env: cleanEnv({ KAS_DATA_DIR: target }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect((keyless as { code: number }).code).toBe(1);
    expect((keyless as { stderr: string }).stderr).toMatch(/does not hold the encryption key/);
    expect(readdirSync(target)).toEqual([]);
    const restored = await run(process.execPath, [cli, 'restore', file, '--key-file', keyFile], {
      env: cleanEnv({ KAS_DATA_DIR: target }),
    });
    expect(restored.stdout).toMatch(/Restored/);
    const again = await run(process.execPath, [cli, 'restore', file, '--key-file', keyFile], {
      env: cleanEnv({ KAS_DATA_DIR: target }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect((again as { code: number }).code).toBe(1);
    expect((again as { stderr: string }).stderr).toMatch(/not empty/);

    const copy = await serve({ KAS_DATA_DIR: target }, 20_000);
    expect((await call(copy.url, 'GET', '/api/me', basic.api_key)).role).toBe('basic');
    const session = await call(
      copy.url,
      'GET',
      `/api/chat/get-chat-session/${chat_session_id}`,
      basic.api_key,
    );
    expect(session.description).toBe('kept chat');
    expect((await call(copy.url, 'GET', `/api/persona/${agent.id}`, KEY)).name).toBe('Kept agent');
    const found = await call(copy.url, 'POST', '/api/admin/search', KEY, {
      query: 'zeppelin hydrogen',
      filters: {},
    });
    expect(found.documents.map((d: { document_id: string }) => d.document_id)).toContain('zeppelin');
    expect(await stop(copy.child)).toBe(0);
  }, 120_000);

  it('explains that Postgres is backed up with pg_dump', async () => {
    const failed = await run(process.execPath, [cli, 'backup', join(tempDir(), 'x')], {
      env: cleanEnv({
        DATABASE_URL: 'postgres://kas@127.0.0.1:1/kas',
        KAS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect((failed as { code: number }).code).toBe(2);
    expect((failed as { stderr: string }).stderr).toMatch(/pg_dump/);
  });
});
