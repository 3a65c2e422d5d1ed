import { configFrom, createDatabase, migrateToLatest } from '@kas/server';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres.ts';
import '@kas/server/testing/provided-context.ts';

const TEMPLATE_DB = 'kas_template';

/**
 * Global setup of the projects that use a real Postgres: a server on a random port with a migrated
 * template database, so that each test file gets its own fresh database in well under a second.
 */
export default async function setup(project: TestProject) {
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

  return () => server.stop();
}
