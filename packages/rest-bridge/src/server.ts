import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Config,
  type CreateDbOptions,
  createRuntime,
  type Logger,
  type Runtime,
  startWorker,
  WORKER_TASKS,
} from '@kas/server';
import { createHttpApp } from './app.ts';

export interface RunningServer {
  runtime: Runtime;
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Starts the API (and, unless disabled, the background worker) in this process. */
export async function startServer(
  config: Config,
  options: { logger?: Logger; worker?: boolean; db?: CreateDbOptions } = {},
): Promise<RunningServer> {
  const runtime = await createRuntime(config, { logger: options.logger, db: options.db });
  const worker = options.worker ? startWorker(runtime.deps, WORKER_TASKS) : undefined;
  const app = createHttpApp(runtime.deps);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  server.keepAliveTimeout = 65_000;
  // Slow clients cannot hold connections open: headers within 20 s, the whole request within 60 s
  // (answers, streams included, are not limited by these).
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    runtime,
    server,
    url,
    close: () => {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await worker?.stop();
        await runtime.close();
      })();
      return closing;
    },
  };
}
