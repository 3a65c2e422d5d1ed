import { constants, createReadStream, readdirSync, rmSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { PGlite } from '@electric-sql/pglite';

/**
 * Snapshots of an embedded database directory that never hold up the service for longer than a copy.
 *
 * PGlite's own `dumpDataDir` builds the tarball and gzips it while holding its query lock, so every
 * request that touches the database waits for the whole compression (≈ 1 s per 40 MB, 10 s and more
 * on large directories). Here the lock is held only while the directory's files are copied (async
 * file copies: the event loop stays free, and copy-on-write where the file system offers it); the tar
 * stream and gzip are built from the copy afterwards. Under the lock no statement runs and PGlite
 * writes every page and WAL record straight to its files, so the copy is exactly what `dumpDataDir`
 * would have read: a crash-consistent directory that Postgres recovers from its WAL on first start.
 * The archive has PGlite's layout (ustar, names `/<path>` relative to the directory), so restores load
 * it with `loadDataDir`, as they load older backups.
 */

const STAGING_PREFIX = 'backup-staging-';
const BLOCK = 512;
/** Copies in flight at once while the lock is held. */
const COPY_CONCURRENCY = 8;

/** Removes staging copies left by a backup that was killed midway (start-up, under the directory lock). */
export function removeStaleSnapshots(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names)
    if (name.startsWith(STAGING_PREFIX)) rmSync(join(parent, name), { recursive: true, force: true });
}

/** A consistent gzipped tarball of `pgdata` (PGlite's layout), staged in a temporary directory under `parent`. */
export async function snapshotDataDir(pglite: PGlite, pgdata: string, parent: string): Promise<Uint8Array> {
  const staging = await mkdtemp(join(parent, STAGING_PREFIX));
  try {
    await pglite._runExclusiveQuery(() => copyTree(pgdata, staging));
    return await gzipCollect(Readable.from(tarEntries(staging)));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function copyTree(from: string, to: string): Promise<void> {
  const files: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(join(from, relative), { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await mkdir(join(to, path));
        await walk(path);
      } else if (entry.isFile()) files.push(path);
    }
  };
  await walk('');
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const path = files[next++] as string;
      await copyFile(join(from, path), join(to, path), constants.COPYFILE_FICLONE);
    }
  };
  await Promise.all(Array.from({ length: COPY_CONCURRENCY }, worker));
}

/** The directory as ustar records: each directory before its contents, names sorted. */
async function* tarEntries(root: string): AsyncGenerator<Buffer> {
  async function* walk(relative: string): AsyncGenerator<Buffer> {
    const entries = (await readdir(join(root, relative), { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const entry of entries) {
      const path = `${relative}/${entry.name}`;
      const info = await stat(join(root, path));
      const mtime = Math.floor(info.mtimeMs / 1000);
      if (entry.isDirectory()) {
        yield tarHeader(path, { size: 0, mode: info.mode, mtime, directory: true });
        yield* walk(path);
      } else if (entry.isFile()) {
        yield tarHeader(path, { size: info.size, mode: info.mode, mtime, directory: false });
        for await (const chunk of createReadStream(join(root, path))) yield chunk as Buffer;
        const pad = (BLOCK - (info.size % BLOCK)) % BLOCK;
        if (pad) yield Buffer.alloc(pad);
      }
    }
  }
  yield* walk('');
  yield Buffer.alloc(BLOCK * 2);
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

/** One POSIX ustar header block. */
export function tarHeader(
  name: string,
  entry: { size: number; mode: number; mtime: number; directory: boolean },
): Buffer {
  const block = Buffer.alloc(BLOCK);
  if (Buffer.byteLength(name) > 99)
    throw new Error(`A path in the data directory is too long for tar: ${name}`);
  block.write(name, 0, 'utf8');
  block.write(octal(entry.mode & 0o777, 8), 100, 'ascii');
  block.write(octal(0, 8), 108, 'ascii');
  block.write(octal(0, 8), 116, 'ascii');
  block.write(octal(entry.directory ? 0 : entry.size, 12), 124, 'ascii');
  block.write(octal(entry.mtime, 12), 136, 'ascii');
  block.write(entry.directory ? '5' : '0', 156, 'ascii');
  block.write('ustar\u000000', 257, 'ascii');
  block.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

/** Gzips a stream on libuv's thread pool and gathers the output. */
async function gzipCollect(input: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  await pipeline(input, createGzip(), async (gzipped: AsyncIterable<Buffer>) => {
    for await (const chunk of gzipped) chunks.push(chunk);
  });
  return new Uint8Array(Buffer.concat(chunks));
}
