import { createServer } from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1 (callers retry if it is taken by the time they bind). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
