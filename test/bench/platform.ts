/**
 * Platform benchmark: requests/s and latency of an authenticated `GET /api/admin/api-key` on kas
 * against a bare express "hello" server, each in its own process, loaded by autocannon from this one.
 * Authentication's own cost is `GET /api/me` (authenticated, no other work) minus `GET /api/health`
 * (no key). kas runs on the embedded database and again on a real Postgres.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../harness/net.ts';
import { startPostgres } from '../harness/postgres.ts';

const root = join(import.meta.dirname, '../..');
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 16;
const KEY = `svck-${'k'.repeat(43)}`;

export interface LoadResult {
  name: string;
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  /**
   * The server process's CPU time (user + system, all threads) per request while loaded, in µs: unlike
   * requests/s it hardly moves when other work shares the machine. Null where /proc cannot tell.
   */
  server_cpu_us: number | null;
}

/** A process's CPU time so far in ms (Linux /proc; clock ticks of 10 ms), or null elsewhere. */
function cpuTimeMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

async function load(
  name: string,
  url: string,
  headers: Record<string, string> = {},
  serverPid?: number,
): Promise<LoadResult> {
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 });
  const cpuBefore = cpuTimeMs(serverPid);
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION });
  const cpuAfter = cpuTimeMs(serverPid);
  return {
    name,
    requests_per_s: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    server_cpu_us:
      cpuBefore === null || cpuAfter === null || !result.requests.total
        ? null
        : +(((cpuAfter - cpuBefore) * 1000) / result.requests.total).toFixed(1),
  };
}

/** Sequential requests (one at a time), timed in microseconds: the latency of the path itself, unloaded. */
async function sequentialP50(
  url: string,
  headers: Record<string, string> = {},
  count = 2000,
): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count + 200; i++) {
    const started = process.hrtime.bigint();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (i >= 200) samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

export interface AuthLatency {
  mode: string;
  health_p50_ms: number;
  me_p50_ms: number;
  auth_ms: number;
}

function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    // Listens only until the line is seen: the server's request log would otherwise pile up here.
    const onData = (data: Buffer) => {
      output += data;
      const match = pattern.exec(output);
      if (!match) return;
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.stdout?.resume();
      child.stderr?.resume();
      resolve(match[0]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
}

async function startKas(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(root, 'packages/rest-bridge/src/cli.ts'), 'serve', '--no-worker'],
    {
      env: {
        ...process.env,
        PORT: String(port),
        KAS_BOOTSTRAP_ADMIN_KEY: KEY,
        KAS_RATE_LIMIT_PER_MINUTE: '0',
        KAS_LOG_LEVEL: 'info',
        ...env,
      },
    },
  );
  await waitForLine(child, /kas is listening/);
  return { child, url: `http://127.0.0.1:${port}` };
}

async function stop(child: ChildProcess) {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

export async function benchPlatform(): Promise<{ load: LoadResult[]; auth: AuthLatency[] }> {
  const auth = { authorization: `Bearer ${KEY}` };
  const results: LoadResult[] = [];
  const latencies: AuthLatency[] = [];
  const measureAuth = async (mode: string, url: string) => {
    const health = await sequentialP50(`${url}/api/health`);
    const me = await sequentialP50(`${url}/api/me`, auth);
    latencies.push({
      mode,
      health_p50_ms: +health.toFixed(3),
      me_p50_ms: +me.toFixed(3),
      auth_ms: +(me - health).toFixed(3),
    });
  };
  const bare = spawn(process.execPath, [join(import.meta.dirname, 'bare-express.ts')]);
  const barePort = JSON.parse(await waitForLine(bare, /\{"port":\d+\}/)).port;
  results.push(await load('bare express GET /hello', `http://127.0.0.1:${barePort}/hello`, {}, bare.pid));
  await stop(bare);
  const likeKas = spawn(process.execPath, [join(import.meta.dirname, 'bare-express.ts')], {
    env: { ...process.env, BARE_LIKE_KAS: '1' },
  });
  const likeKasPort = JSON.parse(await waitForLine(likeKas, /\{"port":\d+\}/)).port;
  results.push(
    await load("bare express + helmet, kas's body", `http://127.0.0.1:${likeKasPort}/hello`, {}, likeKas.pid),
  );
  await stop(likeKas);

  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-'));
  const embedded = await startKas({ KAS_DATA_DIR: dataDir });
  results.push(
    await load('embedded: GET /api/health (no key)', `${embedded.url}/api/health`, {}, embedded.child.pid),
  );
  results.push(
    await load('embedded: GET /api/me (auth only)', `${embedded.url}/api/me`, auth, embedded.child.pid),
  );
  results.push(
    await load(
      'embedded: GET /api/admin/api-key',
      `${embedded.url}/api/admin/api-key`,
      auth,
      embedded.child.pid,
    ),
  );
  await measureAuth('embedded', embedded.url);
  await stop(embedded.child);
  rmSync(dataDir, { recursive: true, force: true });

  const postgres = await startPostgres();
  try {
    const server = await startKas({
      DATABASE_URL: postgres.url,
      KAS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
    });
    results.push(
      await load('postgres: GET /api/health (no key)', `${server.url}/api/health`, {}, server.child.pid),
    );
    results.push(
      await load('postgres: GET /api/me (auth only)', `${server.url}/api/me`, auth, server.child.pid),
    );
    results.push(
      await load(
        'postgres: GET /api/admin/api-key',
        `${server.url}/api/admin/api-key`,
        auth,
        server.child.pid,
      ),
    );
    await measureAuth('postgres', server.url);
    await stop(server.child);
    // The floor: bare express running the same two prepared statements on the same database.
    const floor = spawn(process.execPath, [join(import.meta.dirname, 'bare-express-pg.ts')], {
      env: { ...process.env, DATABASE_URL: postgres.url },
    });
    const floorPort = JSON.parse(await waitForLine(floor, /\{"port":\d+\}/)).port;
    results.push(
      await load(
        'postgres floor: bare express + the same 2 statements',
        `http://127.0.0.1:${floorPort}/keys`,
        auth,
        floor.pid,
      ),
    );
    await stop(floor);
  } finally {
    await postgres.stop();
  }
  return { load: results, auth: latencies };
}

export function summarisePlatform({
  load: results,
  auth,
}: {
  load: LoadResult[];
  auth: AuthLatency[];
}): string[] {
  const find = (name: string) => results.find((r) => r.name === name)!;
  const bare = find('bare express GET /hello');
  const likeKas = find("bare express + helmet, kas's body");
  const floor = [
    `floor: bare express with helmet answering kas's body = ${((likeKas.requests_per_s / bare.requests_per_s) * 100).toFixed(0)}% of bare express req/s${likeKas.server_cpu_us !== null && bare.server_cpu_us !== null ? `, ${likeKas.server_cpu_us} µs of CPU per request` : ''}`,
  ];
  return floor.concat(
    ['embedded', 'postgres'].flatMap((mode) => {
      const health = find(`${mode}: GET /api/health (no key)`);
      const me = find(`${mode}: GET /api/me (auth only)`);
      const keys = find(`${mode}: GET /api/admin/api-key`);
      return [
        `${mode}: authenticated GET /api/admin/api-key = ${((keys.requests_per_s / bare.requests_per_s) * 100).toFixed(0)}% of bare express req/s (target ≥ 50%)`,
        ...(keys.server_cpu_us !== null && bare.server_cpu_us !== null
          ? [
              `${mode}: server CPU per request ${keys.server_cpu_us} µs vs bare express ${bare.server_cpu_us} µs (bare ÷ kas = ${((bare.server_cpu_us / keys.server_cpu_us) * 100).toFixed(0)}%, moved less than req/s by other load on the machine)`,
            ]
          : []),
        `${mode}: under load (16 connections) GET /api/me p50 ${me.p50_ms} ms vs /api/health ${health.p50_ms} ms`,
        `${mode}: authentication adds ${auth.find((a) => a.mode === mode)?.auth_ms} ms p50 unloaded (sequential GET /api/me vs /api/health; target < 1 ms)`,
        ...(mode === 'postgres'
          ? [
              `postgres floor: bare express + pg running the same two statements = ${((find('postgres floor: bare express + the same 2 statements').requests_per_s / bare.requests_per_s) * 100).toFixed(0)}% of bare express; kas reaches ${((keys.requests_per_s / find('postgres floor: bare express + the same 2 statements').requests_per_s) * 100).toFixed(0)}% of that floor`,
            ]
          : []),
      ];
    }),
  );
}

if (import.meta.main) {
  const results = await benchPlatform();
  console.table(results.load);
  console.table(results.auth);
  for (const line of summarisePlatform(results)) console.log(line);
}
