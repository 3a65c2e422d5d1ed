import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..');
const sdk = join(root, 'packages/sdk');

/** The newest modification time under a directory (ms). */
function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/**
 * Builds the SDK into packages/sdk/dist when it is missing or older than its sources. A fresh build is left
 * alone: rebuilding empties dist/ first, which would break a test or example importing it meanwhile.
 */
export function buildSdk(): void {
  const built = join(sdk, 'dist/index.js');
  const stale =
    !existsSync(built) ||
    statSync(built).mtimeMs < Math.max(newest(join(sdk, 'src')), newest(join(sdk, 'openapi.json')));
  if (!stale) return;
  process.stderr.write('Building the SDK (packages/sdk)…\n');
  const result = spawnSync('npm', ['run', 'build', '--silent', '--workspace', '@kas/sdk'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  if (result.status !== 0) {
    process.stderr.write('Building the SDK failed.\n');
    process.exit(result.status ?? 1);
  }
}
