import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/net.ts';
import { cleanEnv, serve, stop, stopAllProcesses, tempDir } from '../harness/process.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'packages/rest-bridge/src/cli.ts');
const run = promisify(execFile);

afterAll(stopAllProcesses);

// Each test starts kas processes on a new embedded database (a first start opens and migrates it): under a
// loaded CI machine that takes several times its quiet 4 s, so these tests allow minutes, not seconds.
describe('kas CLI', { timeout: 180_000 }, () => {
  it('first start on a new data dir answers and prints a working admin key once', async () => {
    const dataDir = tempDir();
    const first = await serve({ KAS_DATA_DIR: dataDir });
    const key = /svck-[A-Za-z0-9_-]{43}/.exec(first.output())?.[0];
    expect(key, first.output()).toBeDefined();
    const res = await fetch(`${first.url}/api/admin/api-key`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(200);
    expect((await res.json())[0]).toMatchObject({ api_key_role: 'admin' });

    // A second process on the same data directory exits at once with a clear message.
    const port = await freePort();
    const second = await run(process.execPath, [cli, 'serve'], {
      env: cleanEnv({ KAS_DATA_DIR: dataDir, PORT: String(port) }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect((second as { code: number }).code).toBe(1);
    expect((second as { stderr: string }).stderr).toMatch(/in use by another kas process/);
    // ...and the first one is unharmed.
    expect((await fetch(`${first.url}/api/health`)).status).toBe(200);
    await stop(first.child);

    // The next start reuses the data and prints no new key; the old key still works.
    const again = await serve({ KAS_DATA_DIR: dataDir });
    expect(again.output()).not.toMatch(/svck-/);
    const list = await fetch(`${again.url}/api/admin/api-key`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(list.status).toBe(200);
    await stop(again.child);
  });

  it('api-key create and migrate work on the embedded database', async () => {
    const dataDir = tempDir();
    const migrated = await run(process.execPath, [cli, 'migrate'], {
      env: cleanEnv({ KAS_DATA_DIR: dataDir }),
    });
    expect(migrated.stdout).toMatch(/Applied: 0001_platform/);
    const again = await run(process.execPath, [cli, 'migrate'], { env: cleanEnv({ KAS_DATA_DIR: dataDir }) });
    expect(again.stdout).toMatch(/up to date/);
    const created = await run(
      process.execPath,
      [cli, 'api-key', 'create', '--role', 'admin', '--name', 'ops', '--allow-personal-tokens'],
      {
        env: cleanEnv({ KAS_DATA_DIR: dataDir }),
      },
    );
    const key = created.stdout.trim();
    expect(key).toMatch(/^svck-[A-Za-z0-9_-]{43}$/);
    const server = await serve({ KAS_DATA_DIR: dataDir });
    // An admin key already exists, so none is generated.
    expect(server.output()).not.toMatch(/shown only this once/);
    const res = await fetch(`${server.url}/api/admin/api-key`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(await res.json()).toEqual([
      expect.objectContaining({ api_key_name: 'ops', api_key_role: 'admin', allow_personal_tokens: true }),
    ]);
    await stop(server.child);
  });

  it('user create and user token create give a person a working personal token', async () => {
    const dataDir = tempDir();
    const env = { env: cleanEnv({ KAS_DATA_DIR: dataDir }) };
    const created = await run(
      process.execPath,
      [cli, 'user', 'create', '--email', 'Ann@Corp.example', '--role', 'curator'],
      env,
    );
    expect(JSON.parse(created.stdout)).toMatchObject({
      email: 'Ann@Corp.example',
      role: 'curator',
      account_type: 'person',
    });
    const duplicate = await run(
      process.execPath,
      [cli, 'user', 'create', '--email', 'ann@corp.example'],
      env,
    ).catch((e: { code: number; stderr: string }) => e);
    expect(duplicate).toMatchObject({ code: 1, stderr: expect.stringContaining('already exists') });
    const token = (
      await run(
        process.execPath,
        [cli, 'user', 'token', 'create', '--email', 'ann@corp.example', '--expires-in-days', '7'],
        env,
      )
    ).stdout.trim();
    expect(token).toMatch(/^kpat-[A-Za-z0-9_-]{43}$/);
    const server = await serve({ KAS_DATA_DIR: dataDir });
    const res = await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(await res.json()).toMatchObject({
      email: 'Ann@Corp.example',
      role: 'curator',
      credential: 'personal_token',
    });
    await stop(server.child);
  });

  it('KAS_BOOTSTRAP_ADMIN_KEY ensures an admin key with exactly that value', async () => {
    const dataDir = tempDir();
    const bootstrap = `svck-${'b'.repeat(43)}`;
    const server = await serve({ KAS_DATA_DIR: dataDir, KAS_BOOTSTRAP_ADMIN_KEY: bootstrap });
    expect(server.output()).not.toContain('shown only this once');
    const res = await fetch(`${server.url}/api/admin/api-key`, {
      headers: { authorization: `Bearer ${bootstrap}` },
    });
    expect(res.status).toBe(200);
    await stop(server.child);
  });

  it('a bad setting stops start-up with a message naming the variable', async () => {
    const result = await run(process.execPath, [cli, 'serve'], {
      env: cleanEnv({ KAS_DATA_DIR: tempDir(), KAS_RATE_LIMIT_PER_MINUTE: 'lots' }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect((result as { code: number }).code).toBe(1);
    expect((result as { stderr: string }).stderr).toMatch(/KAS_RATE_LIMIT_PER_MINUTE/);
  });

  it('rejects unknown commands and bad roles with usage', async () => {
    const unknown = await run(process.execPath, [cli, 'frobnicate']).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(unknown).toMatchObject({ code: 2 });
    expect((unknown as { stderr: string }).stderr).toMatch(/Usage: kas/);
    const badRole = await run(process.execPath, [cli, 'api-key', 'create', '--role', 'owner'], {
      env: cleanEnv({ KAS_DATA_DIR: tempDir() }),
    }).catch((e: { code: number; stderr: string }) => e);
    expect(badRole).toMatchObject({ code: 2 });
  });

  it('says what is missing or wrong, then the short usage of that command', async () => {
    const env = { env: cleanEnv({ KAS_DATA_DIR: tempDir() }) };
    const fails = (args: string[]) =>
      run(process.execPath, [cli, ...args], env).then(
        (r) => ({ code: 0, stderr: r.stderr }),
        (e: { code: number; stderr: string }) => e,
      );
    const missing = await fails(['user', 'create']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^--email is missing\.\n\nUsage:\n {2}kas user create --email/);
    // The short usage, not the whole list.
    expect(missing.stderr).not.toMatch(/kas serve/);
    const bad = await fails(['user', 'create', '--email', 'bad', '--role', 'admin']);
    expect(bad).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--email must be an email address \(got "bad"\)/),
    });
    const token = await fails(['user', 'token', 'create']);
    expect(token).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--email is missing[\s\S]*kas user token create/),
    });
    const noFile = await fails(['backup']);
    expect(noFile).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/backup file to write is missing[\s\S]*kas backup <file>/),
    });
    const unknownOption = await fails(['api-key', 'create', '--rol', 'admin']);
    expect(unknownOption).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--rol[\s\S]*kas api-key create/),
    });
    const noSub = await fails(['api-key']);
    expect(noSub).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/api-key needs a command[\s\S]*kas api-key list/),
    });
  });

  it('prints its version, the same as the health endpoint and the OpenAPI document', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'packages/server/package.json'), 'utf8'));
    const printed = await run(process.execPath, [cli, '--version']);
    expect(printed.stdout).toBe(`${version}\n`);
    const server = await serve({ KAS_DATA_DIR: tempDir() }, 60_000);
    expect(await (await fetch(`${server.url}/api/health`)).json()).toEqual({ status: 'ok', version });
    const openapi = await (await fetch(`${server.url}/api/openapi.json`)).json();
    expect(openapi.info.version).toBe(version);
    await stop(server.child);
  }, 120_000);

  it('api-key list shows the keys; the commands on the embedded database say the server must be stopped', async () => {
    const dataDir = tempDir();
    const env = { env: cleanEnv({ KAS_DATA_DIR: dataDir }) };
    const created = await run(process.execPath, [cli, 'api-key', 'create', '--name', 'reader'], env);
    expect(created.stderr).toMatch(/No --role given: the role is basic/);
    const listed = await run(process.execPath, [cli, 'api-key', 'list'], env);
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+KEY\s+EXPIRES\n/);
    expect(listed.stdout).toMatch(/\n1\s+reader\s+basic\s+svck-\S+\s+never\n/);
    expect(listed.stdout).not.toContain(created.stdout.trim());
    const json = JSON.parse((await run(process.execPath, [cli, 'api-key', 'list', '--json'], env)).stdout);
    expect(json).toEqual([expect.objectContaining({ api_key_name: 'reader', api_key_role: 'basic' })]);

    const server = await serve({ KAS_DATA_DIR: dataDir }, 60_000);
    for (const [args, hint] of [
      [['user', 'create', '--email', 'ann@corp.example', '--role', 'basic'], 'PUT /api/manage/admin/users'],
      [['user', 'token', 'create', '--email', 'ann@corp.example'], 'POST /api/user/pats'],
      [['api-key', 'list'], 'GET /api/admin/api-key'],
    ] as const) {
      const refused = await run(process.execPath, [cli, ...args], env).catch(
        (e: { code: number; stderr: string }) => e,
      );
      expect(refused).toMatchObject({ code: 1 });
      const { stderr } = refused as { stderr: string };
      expect(stderr).toMatch(/a running kas holds it/);
      expect(stderr).toMatch(/Stop the server first/);
      expect(stderr).toContain(hint);
      expect(stderr).not.toMatch(/\n\s+at /);
    }
    await stop(server.child);
  }, 120_000);
});
