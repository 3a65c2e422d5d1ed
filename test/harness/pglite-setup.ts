import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, createDatabase, migrateToLatest, openPGlite } from '@kas/server';
import type { TestProject } from 'vitest/node';
import '@kas/server/testing';

/**
 * Global setup of the projects that use the embedded database: a migrated PGlite data-dir dump that
 * each test file clones into memory in well under a second. It starts no Postgres, so the fast loop
 * (`--project pglite`) does not pay for one.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), 'kas-test-'));
  const pglite = await openPGlite(undefined);
  const handle = await createDatabase(configFrom({}), { pglite });
  await migrateToLatest(handle.db);
  const dump = await pglite.dumpDataDir('none');
  const templatePath = join(dir, 'pglite-template.tar');
  writeFileSync(templatePath, Buffer.from(await dump.arrayBuffer()));
  await handle.close();
  project.provide('pgliteTemplate', templatePath);

  return () => rmSync(dir, { recursive: true, force: true });
}
