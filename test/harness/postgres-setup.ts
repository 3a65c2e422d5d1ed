import { configFrom, createDatabase, migrateToLatest } from '@kas/server';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { type PostgresServer, startPostgres } from './postgres.ts';
import '@kas/server/testing';

const TEMPLATE_DB = 'kas_template';

interface Shared {
  server: Promise<PostgresServer>;
  users: number;
}

/**
 * The projects of one run (postgres and e2e) share one server: Vitest runs each project's global setup
 * on its own, in the one main process, so the first starts it and the last to finish stops it.
 */
const shared = globalThis as { kasTestPostgres?: Shared };

async function startWithTemplate(): Promise<PostgresServer> {
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
  return server;
}

/**
 * Global setup of the projects that use a real Postgres: a server on a random port with a migrated
 * template database, so that each test file gets its own fresh database in well under a second.
 */
export default async function setup(project: TestProject) {
  shared.kasTestPostgres ??= { server: startWithTemplate(), users: 0 };
  const entry = shared.kasTestPostgres;
  entry.users++;
  const server = await entry.server;
  project.provide('pgAdminUrl', server.url);
  project.provide('pgTemplate', TEMPLATE_DB);

  return async () => {
    if (--entry.users > 0) return;
    shared.kasTestPostgres = undefined;
    await server.stop();
  };
}
