import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};

let s: TestServer;
let project: string;
beforeAll(async () => {
  s = await startTestServer();
  project = mkdtempSync(join(tmpdir(), 'kas-sdk-consumer-'));
});
afterAll(async () => {
  await s?.close();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the published SDK, outside this repository', () => {
  it('builds, packs and installs into an empty project with the documented command, type-checks strictly and runs against a live server', async () => {
    const npm = {
      cwd: project,
      env: { ...process.env, npm_config_update_notifier: 'false' },
      maxBuffer: 1 << 24,
    };
    // The documented way to get the SDK before it is published: build, pack and install the tarball.
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module' }),
    );
    await run('npm', ['run', '-s', 'sdk:pack', '--', '--install', project], {
      ...npm,
      cwd: root,
      env: { ...npm.env, npm_config_prefer_offline: 'true' },
    });
    await run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        `typescript@${rootPackage.devDependencies.typescript}`,
        `@types/node@${rootPackage.devDependencies['@types/node']}`,
      ],
      npm,
    );
    // The tarball carries its README (with the example below) and its license.
    const installedPackage = join(project, 'node_modules/@kas/sdk');
    expect(readdirSync(installedPackage).sort()).toEqual(
      expect.arrayContaining(['LICENSE', 'README.md', 'dist', 'openapi.json', 'package.json']),
    );
    for (const file of ['program.ts', 'tsconfig.json'])
      copyFileSync(join(root, 'test/sdk-consumer', file), join(project, file));
    // The SDK README's example, as installed, is compiled (and run) as written.
    const readme = readFileSync(join(installedPackage, 'README.md'), 'utf8');
    const example = /## Use[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    writeFileSync(join(project, 'readme-example.ts'), example!);
    const tsconfig = JSON.parse(readFileSync(join(project, 'tsconfig.json'), 'utf8'));
    tsconfig.files.push('readme-example.ts');
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));

    // Any error fails: missing declarations (an import of the private @kas/server), `any` leaking
    // into a strict program, or a wrong call shape.
    const typecheck = await run(
      process.execPath,
      [join(project, 'node_modules/typescript/bin/tsc'), '-p', project],
      npm,
    ).catch((error: { stdout?: string }) => ({ failed: true, stdout: error.stdout ?? String(error) }));
    expect('failed' in typecheck ? typecheck.stdout : '').toBe('');
    const installed = readFileSync(join(project, 'node_modules/@kas/sdk/dist/index.d.ts'), 'utf8');
    expect(installed).not.toContain('@kas/server');

    const { stdout } = await run(process.execPath, [join(project, 'program.ts')], {
      cwd: project,
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    const fromReadme = await run(process.execPath, [join(project, 'readme-example.ts')], {
      cwd: project,
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(fromReadme.stdout).toContain('signed in as admin');
    expect(result).toMatchObject({ role: 'admin', code: 'PERSONA_NOT_FOUND' });
    expect(result.keys).toBeGreaterThan(0);
    expect(result.lines).toBeGreaterThan(2);
  }, 240_000);
});
