import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  AppError,
  type Config,
  type CreateDbOptions,
  createRuntime,
  type Logger,
  type Runtime,
  StartupError,
  startWorker,
  toErrorResponse,
  WORKER_TASKS,
} from '@kas/server';
import { createHttpApp } from './app.ts';

export interface RunningServer {
  runtime: Runtime;
  server: Server;
  url: string;
  close(): Promise<void>;
}

/**
 * A request Node's HTTP parser refuses before express sees it (a URL or headers over 16 KB, a header
 * timeout, bytes that are not HTTP) is answered with the same envelope as every other error, and the
 * rest of what the client sends is read and dropped so it gets the answer instead of a reset.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket) {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const refusal =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError(
          'HEADERS_TOO_LARGE',
          'The URL and headers must stay under 16 KB; send large values in the body',
        )
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('REQUEST_TIMEOUT', 'The request was not received in time')
        : new AppError('BAD_REQUEST', 'Malformed HTTP request');
  const answer = toErrorResponse(refusal);
  const body = JSON.stringify({ error_code: answer.error_code, detail: answer.detail });
  socket.on('data', () => {});
  socket.on('error', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${answer.status} ${refusal.error_code}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 5000).unref();
}

/** Why the port cannot be listened on, in one line (PORT and HOST are what to change). */
function listenError(config: Config, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  const at = `${config.HOST}:${config.PORT}`;
  if (code === 'EADDRINUSE')
    return new StartupError(
      `Port ${config.PORT} is already in use on ${config.HOST} (another kas, or another program): stop it or set PORT to a free port.`,
    );
  if (code === 'EACCES')
    return new StartupError(
      `Not allowed to listen on ${at}: ports below 1024 need privileges; set PORT to 1024 or above.`,
    );
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new StartupError(`Cannot listen on ${at}: HOST is not an address of this machine.`);
  return error;
}

/** Starts the API (and, unless disabled, the background worker) in this process. */
export async function startServer(
  config: Config,
  options: { logger?: Logger; worker?: boolean; db?: CreateDbOptions } = {},
): Promise<RunningServer> {
  // The port is taken first: a port in use fails before the database is opened or migrated, and before
  // a first admin key is created that could then never be shown. Until the app is ready, requests are
  // answered 503 (a health check sees "not yet").
  const server = createServer();
  const starting = (_req: IncomingMessage, res: ServerResponse) => {
    const answer = toErrorResponse(new AppError('SERVICE_UNAVAILABLE', 'kas is starting; try again shortly'));
    res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
    res.end(JSON.stringify({ error_code: answer.error_code, detail: answer.detail }));
  };
  server.on('request', starting);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.PORT, config.HOST, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    throw listenError(config, error);
  }
  let runtime: Runtime;
  try {
    runtime = await createRuntime(config, { logger: options.logger, db: options.db });
  } catch (error) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    throw error;
  }
  const worker = options.worker ? startWorker(runtime.deps, WORKER_TASKS) : undefined;
  const app = createHttpApp(runtime.deps);
  server.off('request', starting);
  server.on('request', app);
  server.keepAliveTimeout = 65_000;
  // Slow clients cannot hold connections open: headers within 20 s, the whole request within 60 s
  // (answers, streams included, are not limited by these).
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  server.on('clientError', answerClientError);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    runtime,
    server,
    url,
    /**
     * Graceful: stop accepting, end idle keep-alive connections, stop the chat generations (each saves
     * its partial answer and ends its stream with a `stop` packet), let requests in flight finish for
     * up to KAS_SHUTDOWN_GRACE_S, then the worker's batch, then release the database and its lock.
     */
    close: () => {
      closing ??= (async () => {
        const closingSince = Date.now();
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        server.on('request', (_req, res: { setHeader(name: string, value: string): void }) =>
          res.setHeader('connection', 'close'),
        );
        // Answers being generated may finish within the grace period; those still running near its end
        // are stopped (each saves its partial answer as cut by the shutdown and ends its stream with a
        // `stop` packet), leaving up to 2 s of it for that.
        const graceMs = config.KAS_SHUTDOWN_GRACE_S * 1000;
        const { stopRegistry } = runtime.deps;
        const stopping = setTimeout(() => stopRegistry.stopAll(), graceMs - Math.min(2000, graceMs / 4));
        // Keep-alive connections become idle as their last answer ends: close them as they do.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.closeIdleConnections();
        const grace = setTimeout(() => server.closeAllConnections(), graceMs);
        await drained;
        // A generation whose client went away runs on without a connection: it too may finish in the grace.
        const left = graceMs - (Date.now() - closingSince);
        if (!(await stopRegistry.whenIdle(Math.max(0, left - Math.min(2000, graceMs / 4))))) {
          stopRegistry.stopAll();
          await stopRegistry.whenIdle(2000);
        }
        clearTimeout(stopping);
        clearInterval(sweep);
        clearTimeout(grace);
        await worker?.stop();
        await runtime.close();
      })();
      return closing;
    },
  };
}
