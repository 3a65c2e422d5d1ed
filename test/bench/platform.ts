/**
 * Platform benchmark: requests/s and latency of an authenticated `GET /api/admin/api-key` on kas
 * (embedded database) against a bare express "hello" server, each in its own process, loaded by
 * autocannon from this process. Also the cost of authentication alone (`/api/health` needs no key).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const root = join(import.meta.dirname, '../..');
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 16;

export interface LoadResult {
  name: string;
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function load(name: string, url: string, headers: Record<string, string> = {}): Promise<LoadResult> {
  // Warm up, then measure.
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 });
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION });
  return {
    name,
    requests_per_s: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
  };
}

function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (data: Buffer) => {
      output += data;
      const match = pattern.exec(output);
      if (match) resolve(match[0]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
}

export async function benchPlatform(): Promise<LoadResult[]> {
  const children: ChildProcess[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-'));
  try {
    const bare = spawn(process.execPath, [join(import.meta.dirname, 'bare-express.ts')]);
    children.push(bare);
    const barePort = JSON.parse(await waitForLine(bare, /\{"port":\d+\}/)).port;

    const port = await freePort();
    const key = `svck-${'k'.repeat(43)}`;
    const kas = spawn(
      process.execPath,
      [join(root, 'packages/rest-bridge/src/cli.ts'), 'serve', '--no-worker'],
      {
        env: {
          ...process.env,
          PORT: String(port),
          KAS_DATA_DIR: dataDir,
          KAS_BOOTSTRAP_ADMIN_KEY: key,
          KAS_RATE_LIMIT_PER_MINUTE: '0',
          KAS_LOG_LEVEL: 'info',
        },
      },
    );
    children.push(kas);
    await waitForLine(kas, /kas is listening/);

    const results = [
      await load('bare express GET /hello', `http://127.0.0.1:${barePort}/hello`),
      await load('kas GET /api/health (no auth)', `http://127.0.0.1:${port}/api/health`),
      await load('kas GET /api/admin/api-key (authenticated)', `http://127.0.0.1:${port}/api/admin/api-key`, {
        authorization: `Bearer ${key}`,
      }),
    ];
    return results;
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const results = await benchPlatform();
  console.table(results);
  const [bare, health, keys] = results as [LoadResult, LoadResult, LoadResult];
  console.log(
    `authenticated list / bare express: ${((keys.requests_per_s / bare.requests_per_s) * 100).toFixed(0)}% (target ≥ 50%)`,
  );
  console.log(
    `authentication p50 overhead vs /api/health: ${(keys.p50_ms - health.p50_ms).toFixed(2)} ms (target < 1 ms)`,
  );
}
