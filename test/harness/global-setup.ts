import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, createDatabase, migrateToLatest, openPGlite } from '@kas/server';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres.ts';
import '@kas/server/testing';

const TEMPLATE_DB = 'kas_template';

/**
 * Runs once per test run: a real Postgres on a random port with a migrated template database, and a
 * migrated PGlite dump, so that each test file gets its own fresh database in well under a second.
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

  const server = await startPostgres();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();
  const template = await createDatabase(
    configFrom({ DATABASE_URL: server.urlFor(TEMPLATE_DB), KAS_ENCRYPTION_KEY: 'a'.repeat(43) }),
  );
  await migrateToLatest(template.db);
  await template.close();
  project.provide('pgAdminUrl', server.url);
  project.provide('pgTemplate', TEMPLATE_DB);

  return async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
