import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, PGliteDialect } from 'kysely';
import { describe, expect, it } from 'vitest';
import { testDbKind } from '../testing/test-runtime.ts';
import { migrateToLatest, openPGlite } from './database.ts';

/** This process's open file descriptors on files under `dir`. */
function heldUnder(dir: string): string[] {
  const held: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) held.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return held;
}

// The soak's open file descriptors crept up for minutes: the embedded Postgres keeps every relation
// file it touched open (its file cache, up to max_files_per_process, 1000 by default), so the count
// followed each table, index and fork the traffic and VACUUM reached, towards ~1,000.
const embeddedOnLinux = testDbKind() === 'pglite' && process.platform === 'linux';
describe.runIf(embeddedOnLinux)('embedded database files', { tags: ['slow'] }, () => {
  it('holds at most a bounded number of data files open, however many relations it touches', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kas-files-'));
    const pglite = await openPGlite(dir);
    try {
      const db = new Kysely({ dialect: new PGliteDialect({ pglite }) });
      await migrateToLatest(db);
      const tables = await pglite.query<{ name: string }>(
        `SELECT oid::regclass::text AS name FROM pg_class WHERE relkind = 'r'`,
      );
      expect(tables.rows.length).toBeGreaterThan(100);
      for (const { name } of tables.rows) await pglite.query(`SELECT count(*) FROM ${name}`);
      await pglite.exec('VACUUM (ANALYZE)');
      for (const { name } of tables.rows) await pglite.query(`SELECT count(*) FROM ${name}`);
      const held = heldUnder(dir);
      expect(held.filter((f) => f.endsWith('(deleted)'))).toEqual([]);
      expect(held.length).toBeLessThanOrEqual(128);
      // Still answers correctly with files closed and reopened behind the scenes.
      const count = await pglite.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_class');
      expect(count.rows[0]!.n).toBeGreaterThan(100);
    } finally {
      await pglite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
