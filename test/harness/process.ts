/** Real `kas serve` processes for end-to-end tests: start on a free port, stop by signal, clean up. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './net.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'packages/rest-bridge/src/cli.ts');
const dirs: string[] = [];
const children: ChildProcess[] = [];

/** Kills what the tests started and removes their directories (call from afterAll). */
export function stopAllProcesses(): void {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kas-cli-'));
  dirs.push(dir);
  return dir;
}

/** This process's environment without kas settings, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('KAS_') && k !== 'DATABASE_URL' && v) env[k] = v;
  return { ...env, KAS_LOG_LEVEL: 'info', ...extra };
}

/**
 * Starts `kas serve` (with `args`, e.g. `--no-worker`) and resolves once /api/health answers, with
 * everything it printed so far. `watch` sees everything printed so far each time it prints.
 */
// The time first start takes is measured by the first-start benchmark; tests only need it to end.
export async function serve(
  env: Record<string, string>,
  timeoutMs = 60_000,
  args: string[] = [],
  watch: (output: string) => void = () => {},
) {
  const port = await freePort();
  const child = spawn(process.execPath, [cli, 'serve', ...args], {
    env: cleanEnv({ PORT: String(port), ...env }),
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
    watch(output);
  });
  child.stderr.on('data', (d) => {
    output += d;
    watch(output);
  });
  const started = Date.now();
  const url = `http://127.0.0.1:${port}`;
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`kas serve exited ${child.exitCode}: ${output}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return { child, url, output: () => output, startupMs: Date.now() - started };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`kas serve did not answer /api/health within ${timeoutMs} ms: ${output}`);
}

/** Sends SIGTERM and resolves with the exit code. */
export async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}
