import { parentPort, workerData } from 'node:worker_threads';
import { PGliteDriver } from 'kysely';
import { openPGlite } from './database.ts';
import type { ThreadReply, ThreadRequest, ThreadStart } from './pglite-thread.ts';
import { snapshotDataDir } from './snapshot.ts';

/**
 * The embedded database's own thread (see pglite-thread.ts): it opens PGlite on the data directory and
 * runs what the main thread asks, one connection driven by Kysely's own PGlite driver (each transaction
 * under PGlite's exclusive lock, as in the main thread before).
 */
const start = workerData as ThreadStart;
const port = parentPort!;

/** What crosses the thread boundary of a database error: its fields, not the statement or its parameters. */
function plainError(error: unknown): ThreadReply['error'] {
  if (!(error instanceof Error)) return { message: String(error) };
  const { query: _q, params: _p, ...fields } = error as Error & Record<string, unknown>;
  const plain: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields))
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) plain[key] = value;
  return { ...plain, message: error.message, name: error.name, stack: error.stack };
}

try {
  const pglite = await openPGlite(start.pgdata, { sharedBuffersMb: start.sharedBuffersMb });
  const driver = new PGliteDriver({ pglite });
  await driver.init();
  // The driver's own connection type (its transaction methods take it); its declared type is the interface.
  const connection = (await driver.acquireConnection()) as Parameters<PGliteDriver['beginTransaction']>[0];
  const memory = () =>
    (pglite as unknown as { mod?: { wasmMemory?: WebAssembly.Memory } }).mod?.wasmMemory?.buffer.byteLength ??
    0;
  const run = async (request: ThreadRequest): Promise<unknown> => {
    switch (request.op) {
      case 'query':
        return connection.executeQuery({
          sql: request.sql,
          parameters: request.parameters,
          query: { kind: 'RawNode' } as never,
          queryId: { queryId: '' },
        });
      case 'begin':
        return driver.beginTransaction(connection);
      case 'commit':
        return driver.commitTransaction(connection);
      case 'rollback':
        return driver.rollbackTransaction(connection);
      case 'snapshot':
        if (!start.pgdata) throw new Error('a database in memory has no data directory to snapshot');
        return snapshotDataDir(pglite, start.pgdata);
      case 'close':
        if (!pglite.closed) await pglite.close();
        return undefined;
    }
  };
  port.on('message', (request: ThreadRequest) => {
    run(request).then(
      (result) => {
        // Copied, never transferred: a small Buffer's memory is Node's shared pool.
        port.postMessage({ id: request.id, result, memory: memory() } satisfies ThreadReply);
      },
      (error: unknown) => port.postMessage({ id: request.id, error: plainError(error), memory: memory() }),
    );
  });
  port.postMessage({ id: 0, result: 'ready', memory: memory() } satisfies ThreadReply);
} catch (error) {
  port.postMessage({ id: 0, error: plainError(error), memory: 0 } satisfies ThreadReply);
}
