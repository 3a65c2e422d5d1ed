/**
 * `npm test`: the full suite, everything CI checks, on a fresh machine. Builds the SDK, typechecks,
 * lints, then runs every Vitest project (server tests on PGlite and on a real Postgres the harness
 * starts itself, and end-to-end tests over HTTP: crash rounds, the contract fuzzer, the SDK tarball,
 * the browser check), slow-tagged tests included. Ends with the line `N passed, M failed`.
 * The developers' fast loop is `npm run test:fast` (see CONTRIBUTING.md).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'node_modules/.bin');
const env = {
  ...process.env,
  PATH: `${bin}:${process.env.PATH}`,
  TURBO_TELEMETRY_DISABLED: '1',
  FORCE_COLOR: process.env.CI ? '0' : '1',
};
let passed = 0;
let failed = 0;
const failures: string[] = [];

function step(name: string, command: string, args: string[]): boolean {
  process.stdout.write(`\n=== ${name}: ${command} ${args.join(' ')}\n`);
  const result = spawnSync(command, args, { cwd: root, env, stdio: 'inherit' });
  const ok = result.status === 0;
  if (ok) passed++;
  else {
    failed++;
    failures.push(name);
  }
  return ok;
}

// The docs page is checked in a real browser. Installing one is CI's job (`.ci/run`), not this script's.
if (!existsSync('/usr/bin/chromium'))
  process.stdout.write(
    process.env.CI
      ? 'Chromium is missing (/usr/bin/chromium): the browser test fails; .ci/run installs it as root.\n'
      : "Chromium is missing (/usr/bin/chromium): the browser test is skipped (Debian's chromium package runs it).\n",
  );
step('sdk build', 'npx', ['turbo', 'run', 'build', '--filter=@kas/sdk', '--output-logs=errors-only']);
step('typecheck', 'npx', ['turbo', 'run', 'typecheck', '--output-logs=errors-only']);
step('typecheck scripts', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']);
step('lint', 'npx', ['biome', 'ci', '.']);
step('layering', process.execPath, ['scripts/check-layering.ts']);

const outDir = mkdtempSync(join(tmpdir(), 'kas-vitest-'));
const report = join(outDir, 'report.json');
process.stdout.write('\n=== tests: vitest run\n');
const vitest = spawnSync(
  'npx',
  [
    'vitest',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    env,
    stdio: 'inherit',
  },
);
if (existsSync(report)) {
  const results = JSON.parse(readFileSync(report, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    numTotalTestSuites: number;
    testResults: Array<{ status: string; name: string; assertionResults: unknown[] }>;
  };
  passed += results.numPassedTests;
  failed += results.numFailedTests;
  // A test file that fails to load has no test results of its own: count it as a failure.
  for (const file of results.testResults) {
    if (file.status === 'failed' && file.assertionResults.length === 0) {
      failed++;
      failures.push(file.name);
    }
  }
  if (results.numFailedTests) failures.push(`${results.numFailedTests} vitest test(s)`);
} else {
  failed++;
  failures.push('vitest produced no report');
}
if (vitest.status !== 0 && !failures.length) {
  failed++;
  failures.push(`vitest exited with ${vitest.status}`);
}
rmSync(outDir, { recursive: true, force: true });

if (failures.length) process.stdout.write(`\nFailed: ${failures.join(', ')}\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
