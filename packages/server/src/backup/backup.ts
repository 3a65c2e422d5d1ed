import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import type { ServiceContext } from '../context.ts';
import { createSecretBox, decodeKey } from '../crypto/secret-box.ts';
import { openPGlite } from '../db/database.ts';
import { AppError } from '../errors.ts';

/**
 * A kas backup: one JSON header line, then PGlite's gzipped tarball of the data directory. The
 * encryption key of the credentials is never in it (version 2): the operator keeps the key apart
 * (`KAS_ENCRYPTION_KEY`, or a copy of the data directory's `encryption.key`) and gives it to the
 * restore. The header holds only a one-way check of the key, so a restore with the wrong key is
 * refused before anything is written.
 */
interface BackupHeader {
  kas_backup: 1 | 2;
  created_at: string;
  /** Version 2: a fixed label encrypted with the key (AES-256-GCM): only the right key opens it. */
  key_check?: string;
  /** Version 1 only (older backups): the key itself, base64, or null when it came from KAS_ENCRYPTION_KEY. */
  encryption_key?: string | null;
}

const KEY_FILE = 'encryption.key';

const KEY_CHECK = 'kas backup key check';

/** A consistent snapshot of the embedded database, taken while the service runs; it does not hold the encryption key. */
export async function createBackup({
  ctx,
}: {
  ctx: ServiceContext<'snapshot' | 'secrets'>;
}): Promise<Uint8Array<ArrayBuffer>> {
  if (!ctx.snapshot)
    throw new AppError(
      'INVALID_INPUT',
      'Backups are for the embedded database; with DATABASE_URL use pg_dump and pg_restore',
    );
  const header: BackupHeader = {
    kas_backup: 2,
    created_at: new Date().toISOString(),
    key_check: ctx.secrets.encrypt(KEY_CHECK),
  };
  const dump = await ctx.snapshot();
  return new Uint8Array(Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), dump]));
}

export interface RestoreOptions {
  /**
   * The encryption key the backup was taken with, as the data directory's `encryption.key` holds it
   * (base64): written into the restored directory. Absent: KAS_ENCRYPTION_KEY must be that key.
   */
  key?: string;
}

/** The key the restored directory will use, checked against the backup; throws before anything is written. */
function restoreKey(config: Config, header: BackupHeader, options: RestoreOptions): string | null {
  if (header.kas_backup === 1) {
    // Older backups carried the key themselves (or relied on KAS_ENCRYPTION_KEY).
    if (!header.encryption_key && !config.KAS_ENCRYPTION_KEY)
      throw new AppError(
        'INVALID_INPUT',
        'The backup was encrypted with KAS_ENCRYPTION_KEY: set the same key to restore it',
      );
    return header.encryption_key ?? null;
  }
  const given = options.key?.trim() || null;
  if (!given && !config.KAS_ENCRYPTION_KEY)
    throw new AppError(
      'INVALID_INPUT',
      'A backup does not hold the encryption key: give the key it was taken with (`kas restore <file> --key-file ' +
        '<encryption.key>` or KAS_ENCRYPTION_KEY)',
    );
  const candidates = [given, config.KAS_ENCRYPTION_KEY ?? null].filter((k): k is string => !!k);
  for (const candidate of candidates) {
    let key: Buffer;
    try {
      key = decodeKey(candidate);
    } catch {
      throw new AppError('INVALID_INPUT', 'The encryption key must be 32 bytes, base64');
    }
    let opens = false;
    try {
      opens = createSecretBox(key).decrypt(header.key_check ?? '') === KEY_CHECK;
    } catch {
      // Another key: GCM's tag does not match.
    }
    if (!opens)
      throw new AppError(
        'INVALID_INPUT',
        given === candidate
          ? 'The key file is not the encryption key this backup was taken with; nothing was restored'
          : 'KAS_ENCRYPTION_KEY is not the encryption key this backup was taken with; nothing was restored',
      );
  }
  return given;
}

/**
 * Restores a backup into an empty data directory (the service must not be running on it). Every check
 * (format, empty directory, the right key) happens before a byte is written; a restore that fails after
 * that removes what it wrote.
 */
export async function restoreBackup(
  config: Config,
  backup: Uint8Array<ArrayBuffer>,
  options: RestoreOptions = {},
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
    if (header.kas_backup !== 1 && header.kas_backup !== 2) throw new Error('not a kas backup');
  } catch {
    throw new AppError('INVALID_INPUT', 'This file is not a kas backup');
  }
  const dir = config.KAS_DATA_DIR;
  const existed = existsSync(dir);
  if (existed && readdirSync(dir).length)
    throw new AppError('INVALID_INPUT', `The data directory ${dir} is not empty: restore into an empty one`);
  const key = restoreKey(config, header, options);
  try {
    mkdirSync(join(dir, 'pgdata'), { recursive: true });
    if (key) writeFileSync(join(dir, KEY_FILE), `${key}\n`, { mode: 0o600 });
    const dump = new Blob([backup.slice(newline + 1)]);
    const pglite = await openPGlite(join(dir, 'pgdata'), { loadDataDir: dump });
    await pglite.close();
  } catch (error) {
    // The directory was empty: leave it as it was.
    for (const entry of existsSync(dir) ? readdirSync(dir) : [])
      rmSync(join(dir, entry), { recursive: true, force: true });
    if (!existed) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return { created_at: header.created_at };
}
