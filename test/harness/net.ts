import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1 (callers retry if it is taken by the time they bind). */
export async function freePort(): Promise<number> {
  return listenOnce(0);
}

/**
 * A free TCP port below the kernel's ephemeral range, for a test that must leave a port closed for a
 * while before it listens there. `freePort()` and every outgoing connection draw from the ephemeral
 * range, so a port from it can be taken by another test in the meantime; nothing in the suite binds
 * a fixed port below that range.
 */
export async function quietPort(): Promise<number> {
  const low = ephemeralLow();
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low - 1 - Math.floor(Math.random() * Math.min(10_000, low - 1025));
    try {
      return await listenOnce(port);
    } catch {
      // taken: try another
    }
  }
  throw new Error('no free port below the ephemeral range');
}

function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const value = Number(low);
    return value > 11_000 ? value : 32_768;
  } catch {
    return 32_768;
  }
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}
