import net from 'node:net';

/**
 * A TCP relay in front of Postgres that can hold back what the server sends to chosen connections: the
 * ones whose startup message carries `application_name` starting with `marker`. Holding them simulates a
 * listener connection that is alive but silent (a network stall) without freezing the whole process.
 */
export async function startPgProxy(
  target: URL,
  marker: string,
): Promise<{ url: string; hold(on: boolean): void; close(): Promise<void> }> {
  const marked = new Set<net.Socket>();
  const sockets = new Set<net.Socket>();
  let holding = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let first = true;
    client.on('data', (chunk) => {
      if (first && chunk.includes(Buffer.from(marker))) {
        marked.add(upstream);
        if (holding) upstream.pause();
      }
      first = false;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      marked.delete(upstream);
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    hold(on) {
      holding = on;
      for (const socket of marked) on ? socket.pause() : socket.resume();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
