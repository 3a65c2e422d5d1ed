/**
 * `npm run sdk:pack [-- --install <project dir>]`: builds the TypeScript SDK, packs it into
 * `dist/kas-sdk-<version>.tgz` and, with `--install`, installs that tarball into a project of yours
 * (`npm install <tarball>` run there). Until `@kas/sdk` is published, this is how a project outside this
 * repository gets it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSdk, root } from './sdk-build.ts';

const args = process.argv.slice(2);
const installIndex = args.indexOf('--install');
const target = installIndex === -1 ? undefined : args[installIndex + 1];
if (
  (installIndex !== -1 && !target) ||
  args.some((arg, i) => arg !== '--install' && i !== installIndex + 1)
) {
  process.stderr.write('Usage: npm run sdk:pack [-- --install <project dir>]\n');
  process.exit(2);
}
if (target && !existsSync(join(resolve(target), 'package.json'))) {
  process.stderr.write(`${resolve(target)} has no package.json: run \`npm init -y\` there first.\n`);
  process.exit(2);
}

buildSdk();
const { version } = JSON.parse(readFileSync(join(root, 'packages/sdk/package.json'), 'utf8')) as {
  version: string;
};
const destination = join(root, 'dist');
mkdirSync(destination, { recursive: true });
const npm = (cwd: string, npmArgs: string[]) => {
  const result = spawnSync('npm', npmArgs, {
    cwd,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  return result.stdout.toString();
};
npm(root, ['pack', './packages/sdk', '--pack-destination', destination, '--silent']);
const tarball = join(destination, `kas-sdk-${version}.tgz`);
if (!existsSync(tarball)) {
  process.stderr.write(`npm pack did not write ${tarball}\n`);
  process.exit(1);
}
if (target) {
  npm(resolve(target), ['install', '--no-audit', '--no-fund', tarball]);
  process.stdout.write(`Installed ${tarball} into ${resolve(target)}.\n`);
} else {
  process.stdout.write(`${tarball}\n`);
}
