import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import type { ServiceContext } from '../context.ts';
import { openPGlite } from '../db/database.ts';
import { AppError } from '../errors.ts';

/**
 * A kas backup: one JSON header line, then PGlite's gzipped tarball of the data directory. The header
 * carries the encryption key when it lives in the data directory (so restored credentials stay
 * readable); a backup is therefore as secret as the data directory itself.
 */
interface BackupHeader {
  kas_backup: 1;
  created_at: string;
  /** base64; null when the key comes from KAS_ENCRYPTION_KEY (the restore needs the same setting). */
  encryption_key: string | null;
}

const KEY_FILE = 'encryption.key';

/** A consistent snapshot of the embedded database, taken while the service runs. */
export async function createBackup({
  ctx,
}: {
  ctx: ServiceContext<'snapshot' | 'config'>;
}): Promise<Uint8Array<ArrayBuffer>> {
  if (!ctx.snapshot)
    throw new AppError(
      'INVALID_INPUT',
      'Backups are for the embedded database; with DATABASE_URL use pg_dump and pg_restore',
    );
  const keyPath = join(ctx.config.KAS_DATA_DIR, KEY_FILE);
  const header: BackupHeader = {
    kas_backup: 1,
    created_at: new Date().toISOString(),
    encryption_key:
      !ctx.config.KAS_ENCRYPTION_KEY && existsSync(keyPath) ? readFileSync(keyPath, 'utf8').trim() : null,
  };
  const dump = await ctx.snapshot();
  return new Uint8Array(Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), dump]));
}

/** Restores a backup into an empty data directory (the service must not be running on it). */
export async function restoreBackup(
  config: Config,
  backup: Uint8Array<ArrayBuffer>,
): Promise<{ created_at: string }> {
  if (config.DATABASE_URL)
    throw new AppError(
      'INVALID_INPUT',
      'Restores are for the embedded database; with DATABASE_URL use pg_restore',
    );
  const newline = backup.indexOf(10);
  let header: BackupHeader;
  try {
    header = JSON.parse(new TextDecoder().decode(backup.subarray(0, newline))) as BackupHeader;
    if (header.kas_backup !== 1) throw new Error('not a kas backup');
  } catch {
    throw new AppError('INVALID_INPUT', 'This file is not a kas backup');
  }
  const dir = config.KAS_DATA_DIR;
  if (existsSync(dir) && readdirSync(dir).length)
    throw new AppError('INVALID_INPUT', `The data directory ${dir} is not empty: restore into an empty one`);
  if (!header.encryption_key && !config.KAS_ENCRYPTION_KEY)
    throw new AppError(
      'INVALID_INPUT',
      'The backup was encrypted with KAS_ENCRYPTION_KEY: set the same key to restore it',
    );
  mkdirSync(join(dir, 'pgdata'), { recursive: true });
  if (header.encryption_key)
    writeFileSync(join(dir, KEY_FILE), `${header.encryption_key}\n`, { mode: 0o600 });
  const dump = new Blob([backup.slice(newline + 1)]);
  const pglite = await openPGlite(join(dir, 'pgdata'), { loadDataDir: dump });
  await pglite.close();
  return { created_at: header.created_at };
}
