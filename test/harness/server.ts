import { type RunningServer, startServer } from '@kas/rest-bridge';
import { type CreateDbOptions, configFrom, type Logger, type Role } from '@kas/server';
import { createTestDatabase, type TestDbKind, testDbKind } from '@kas/server/testing';

export interface TestServer {
  url: string;
  running: RunningServer;
  adminKey: string;
  /** fetch against the server with an optional key; JSON bodies are serialised. */
  request(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  createKey(role: Role, name?: string): Promise<{ key: string; user_id: string; api_key_id: number }>;
  close(): Promise<void>;
}

/** Starts the real HTTP server in this process on a free port, over a fresh database of its own. */
export async function startTestServer(
  options: {
    db?: TestDbKind;
    env?: Record<string, string>;
    dbOptions?: CreateDbOptions;
    worker?: boolean;
    /** Where the server logs (default: a logger at KAS_TEST_LOG_LEVEL, silent). */
    logger?: Logger;
  } = {},
): Promise<TestServer> {
  const database = await createTestDatabase(options.db ?? testDbKind());
  const config = configFrom({
    PORT: '0',
    KAS_LOG_LEVEL: process.env.KAS_TEST_LOG_LEVEL ?? 'silent',
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    KAS_BOOTSTRAP_ADMIN_KEY: `svck-${'A'.repeat(20)}${Math.random().toString(36).slice(2, 12).padEnd(23, 'x')}`,
    ...database.env,
    ...options.env,
  });
  const running = await startServer(config, {
    db: { ...database.dbOptions, ...options.dbOptions },
    worker: options.worker ?? false,
    logger: options.logger,
  });
  const adminKey = config.KAS_BOOTSTRAP_ADMIN_KEY!;
  const request: TestServer['request'] = (method, path, { key, body, rawBody, headers } = {}) =>
    fetch(`${running.url}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined || rawBody !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
  return {
    url: running.url,
    running,
    adminKey,
    request,
    createKey: async (role, name) => {
      const res = await request('POST', '/api/admin/api-key', {
        key: adminKey,
        body: { role, name: name ?? `${role} key` },
      });
      if (res.status !== 200) throw new Error(`createKey failed: ${res.status} ${await res.text()}`);
      const created = (await res.json()) as { api_key: string; user_id: string; api_key_id: number };
      return { key: created.api_key, user_id: created.user_id, api_key_id: created.api_key_id };
    },
    close: async () => {
      await running.close();
      await database.drop();
    },
  };
}
