import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import './provided-context.ts';
import * as apiKeysService from '../api-keys/api-keys.service.ts';
import type { Role } from '../auth/roles.ts';
import { type Config, configFrom } from '../config.ts';
import { createInnerContext, type RequestInfo } from '../context.ts';
import { type CreateDbOptions, openPGlite } from '../db/database.ts';
import { createLogger } from '../logger.ts';
import { createCaller } from '../router.ts';
import { createRuntime, type Runtime } from '../runtime.ts';

export type TestDbKind = 'pglite' | 'postgres';

/** Which database this test project runs on: set per Vitest project through KAS_TEST_DB. */
export function testDbKind(): TestDbKind {
  return process.env.KAS_TEST_DB === 'postgres' ? 'postgres' : 'pglite';
}

export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

export interface TestDatabase {
  env: Record<string, string>;
  dbOptions: CreateDbOptions;
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database of its own: PGlite cloned in memory from the harness's dump, or a new
 * Postgres database created from the harness's migrated template.
 */
export async function createTestDatabase(kind: TestDbKind = testDbKind()): Promise<TestDatabase> {
  if (kind === 'pglite') {
    const dump = new Blob([readFileSync(inject('pgliteTemplate'))]);
    const pglite = await openPGlite(undefined, { loadDataDir: dump });
    return { env: {}, dbOptions: { pglite }, drop: async () => {} };
  }
  const adminUrl = inject('pgAdminUrl');
  const name = `kas_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
        break;
      } catch (error) {
        // Two files cloning the template at the same moment can collide; retry briefly.
        if (attempt >= 20) throw error;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: url.toString(), KAS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY },
    dbOptions: { poolSize: 5 },
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await client.end();
    },
  };
}

export interface TestRuntime {
  runtime: Runtime;
  deps: Runtime['deps'];
  config: Config;
  adminKey: string;
  /**
   * A tRPC caller authenticated with `key` (no key: unauthenticated); `request` adds what the transport
   * would know of the request (the client's address for the failed-authentication limits).
   */
  caller(
    key?: string,
    request?: Partial<Omit<RequestInfo, 'authorization'>>,
  ): ReturnType<typeof createCaller>;
  /** Creates an API key with the role and returns its full value and user id. */
  createKey(role: Role, name?: string): Promise<{ key: string; user_id: string; api_key_id: number }>;
  close(): Promise<void>;
}

export async function createTestRuntime(env: Record<string, string> = {}): Promise<TestRuntime> {
  const database = await createTestDatabase();
  const config = configFrom({
    KAS_LOG_LEVEL: 'silent',
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    // Not a thread per test file: the tests that want one ask.
    KAS_PGLITE_TEXT_THREAD: 'false',
    ...database.env,
    ...env,
  });
  const runtime = await createRuntime(config, {
    db: database.dbOptions,
    skipBootstrap: true,
    logger: createLogger({ KAS_LOG_LEVEL: process.env.KAS_TEST_LOG_LEVEL === 'debug' ? 'debug' : 'silent' }),
  });
  const createKey = async (role: Role, name?: string) => {
    const created = await apiKeysService.createApiKey({
      ctx: runtime.deps,
      input: { role, name: name ?? `${role} key` },
    });
    return { key: created.api_key!, user_id: created.user_id, api_key_id: created.api_key_id };
  };
  const admin = await createKey('admin', 'test admin');
  return {
    runtime,
    deps: runtime.deps,
    config,
    adminKey: admin.key,
    // A fresh context per call, as each HTTP request gets one: the auth middleware sets the actor on it.
    caller: (key, request) =>
      createCaller(() =>
        createInnerContext(runtime.deps, { ...request, authorization: key ? `Bearer ${key}` : undefined }),
      ),
    createKey,
    close: async () => {
      await runtime.close();
      await database.drop();
    },
  };
}
