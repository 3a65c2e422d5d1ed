import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase } from '@kas/server/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, quietPort } from '../harness/net.ts';
import { cleanEnv, serve, stop, stopAllProcesses, tempDir } from '../harness/process.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'packages/rest-bridge/src/cli.ts');
const run = promisify(execFile);
const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

afterAll(stopAllProcesses);

/** Runs `kas serve` expecting it to exit; resolves with its code and what it printed. */
async function failedStart(env: Record<string, string>) {
  const port = await freePort();
  const result = await run(process.execPath, [cli, 'serve'], {
    env: cleanEnv({ PORT: String(port), ...env }),
    timeout: 60_000,
  }).catch((error: { code: number; stdout: string; stderr: string }) => error);
  return result as { code: number; stdout: string; stderr: string };
}

/** The last line kas printed to stderr: one line for the operator, never a stack. */
function expectOneLine(stderr: string, pattern: RegExp) {
  expect(stderr).not.toMatch(/\n\s+at /);
  expect(stderr.trim().split('\n').at(-1)).toMatch(pattern);
}

// Each test starts kas, whose first start takes seconds more on a loaded machine.
describe('start-up', { timeout: 120_000 }, () => {
  it('waits for a Postgres that is not listening yet, then starts', async () => {
    const database = await createTestDatabase('postgres');
    const target = new URL(database.env.DATABASE_URL!);
    // Below the ephemeral range: no other test's server or connection takes it during the wait.
    const port = await quietPort();
    const url = new URL(target);
    url.port = String(port);
    // Nothing listens on `port` until kas says it waits (a timer raced a slow start under load: kas
    // first tried after the relay listened); then a relay to the real Postgres does.
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    let listening: Promise<void> | null = null;
    const relayOnceWaiting = (output: string) => {
      if (listening || !output.includes('waiting for Postgres')) return;
      listening = new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
    };
    try {
      const server = await serve(
        { DATABASE_URL: url.toString(), KAS_ENCRYPTION_KEY: ENCRYPTION_KEY, KAS_LOG_FORMAT: 'json' },
        60_000,
        [],
        relayOnceWaiting,
      );
      await listening;
      expect(server.output()).toMatch(
        /waiting for Postgres at 127\.0\.0\.1:\d+\/kas_t_\w+ \(connect ECONNREFUSED/,
      );
      expect(server.output()).not.toContain(url.password);
      expect(server.output()).toMatch(/accepts connections now/);
      await stop(server.child);
    } finally {
      for (const socket of sockets) socket.destroy();
      relay.close();
      await database.drop();
    }
  });

  it('gives up after KAS_DB_CONNECT_TIMEOUT_S with one line naming the setting', async () => {
    const result = await failedStart({
      DATABASE_URL: `postgres://kas:secret-pw@127.0.0.1:${await quietPort()}/kas`,
      KAS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      KAS_DB_CONNECT_TIMEOUT_S: '1',
    });
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /did not accept connections within 1 s .*KAS_DB_CONNECT_TIMEOUT_S/);
    expect(result.stderr + result.stdout).not.toContain('secret-pw');
  });

  it('fails at once, in one line, on a wrong password or a missing database', async () => {
    const database = await createTestDatabase('postgres');
    try {
      const wrong = new URL(database.env.DATABASE_URL!);
      wrong.password = 'not-the-password';
      const refused = await failedStart({
        DATABASE_URL: wrong.toString(),
        KAS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      });
      expect(refused.code).toBe(1);
      expectOneLine(refused.stderr, /refused the password of user "\w+": check the password in DATABASE_URL/);
      expect(refused.stderr).not.toContain('not-the-password');

      const missing = new URL(database.env.DATABASE_URL!);
      missing.pathname = '/no_such_database';
      const absent = await failedStart({
        DATABASE_URL: missing.toString(),
        KAS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      });
      expect(absent.code).toBe(1);
      expectOneLine(
        absent.stderr,
        /The database "no_such_database" does not exist .*createdb no_such_database/,
      );
    } finally {
      await database.drop();
    }
  });

  it('a port in use and a data directory that is a file are one line each, and no key is lost', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    const dataDir = tempDir();
    try {
      const inUse = await failedStart({ KAS_DATA_DIR: dataDir, PORT: String(port) });
      expect(inUse.code).toBe(1);
      expectOneLine(inUse.stderr, new RegExp(`Port ${port} is already in use .*set PORT to a free port`));
    } finally {
      busy.close();
    }
    // The failed start created no admin key: the first real start still shows one.
    const server = await serve({ KAS_DATA_DIR: dataDir }, 60_000);
    expect(server.output()).toMatch(/shown only this once/);
    await stop(server.child);

    const file = join(tempDir(), 'data');
    writeFileSync(file, 'not a directory');
    const notDir = await failedStart({ KAS_DATA_DIR: file });
    expect(notDir.code).toBe(1);
    expectOneLine(notDir.stderr, /KAS_DATA_DIR .* is a file, not a directory/);
  });

  it('says what it does during a first start before the key banner, and names unknown settings', async () => {
    const server = await serve(
      { KAS_DATA_DIR: tempDir(), KAS_LOG_FORMAT: 'json', KAS_SHUTDOWN_GRACE: '30' },
      60_000,
    );
    const output = server.output();
    expect(output).toContain(
      'KAS_SHUTDOWN_GRACE is not a kas setting and is ignored: did you mean KAS_SHUTDOWN_GRACE_S?',
    );
    const banner = output.indexOf('shown only this once');
    for (const step of [
      'kas is starting',
      'creating the embedded database',
      'applying \\d+ database migrations',
    ])
      expect(output.search(new RegExp(step)), step).toBeGreaterThanOrEqual(0);
    expect(output.search(/applying \d+ database migrations/)).toBeLessThan(banner);
    await stop(server.child);
  });
});
