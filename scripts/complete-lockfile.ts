/**
 * Keeps package-lock.json valid for `npm ci` when the registry in use does not carry every platform's
 * optional binary (e.g. `@biomejs/cli-darwin-arm64`, `@turbo/windows-64`): npm then leaves those entries
 * out of the lock and `npm ci` refuses the lock as out of sync. For each missing optional dependency we
 * add an entry with its platform (`os`/`cpu`/`libc`) read from the package name, so `npm ci` accepts the
 * lock and skips the entry on other platforms without fetching it. Runs as the root `postinstall`;
 * idempotent.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
}

const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix'] as const;
const OS_ALIASES: Record<string, string> = { windows: 'win32', macos: 'darwin' };
const CPU: Record<string, string> = {
  arm64: 'arm64',
  aarch64: 'arm64',
  x64: 'x64',
  '64': 'x64',
  ia32: 'ia32',
  arm: 'arm',
  s390x: 's390x',
  ppc64: 'ppc64',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

/** `@biomejs/cli-linux-x64-musl` → {os: linux, cpu: x64, libc: musl}; undefined when the name says nothing. */
export function platformOf(name: string): Pick<LockEntry, 'os' | 'cpu' | 'libc'> | undefined {
  const parts = (name.split('/').pop() ?? name).toLowerCase().split(/[-_]/);
  const os = parts.map((p) => OS_ALIASES[p] ?? p).find((p) => (OS as readonly string[]).includes(p));
  if (!os) return undefined;
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  const libc = parts.includes('musl')
    ? 'musl'
    : parts.includes('gnu') && os === 'linux'
      ? 'glibc'
      : undefined;
  return { os: [os], ...(cpu ? { cpu: [cpu] } : {}), ...(libc ? { libc: [libc] } : {}) };
}

export function completeLockfile(lock: { packages: Record<string, LockEntry> }): number {
  let added = 0;
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const nested = `${path ? `${path}/` : ''}node_modules/${name}`;
      const hoisted = `node_modules/${name}`;
      if (lock.packages[nested] || lock.packages[hoisted]) continue;
      const platform = platformOf(name);
      if (!platform) continue;
      lock.packages[hoisted] = { version, ...(entry.dev ? { dev: true } : {}), optional: true, ...platform };
      added++;
    }
  }
  return added;
}

if (import.meta.main) {
  const path = join(import.meta.dirname, '..', 'package-lock.json');
  const lock = JSON.parse(readFileSync(path, 'utf8'));
  const added = completeLockfile(lock);
  if (added) {
    const sorted = Object.fromEntries(
      Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
    );
    writeFileSync(path, `${JSON.stringify({ ...lock, packages: sorted }, null, 2)}\n`);
    process.stdout.write(
      `package-lock.json: recorded ${added} optional platform package(s) the registry does not serve\n`,
    );
  }
}
