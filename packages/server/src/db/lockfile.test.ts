import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireDataDirLock, DataDirLockedError, processStartTime } from './lockfile.ts';

const dirs: string[] = [];
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'kas-lock-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('the data-directory lock', () => {
  it('refuses a second holder while the first runs, and frees the directory on release', () => {
    const dir = fresh();
    const release = acquireDataDirLock(dir);
    expect(() => acquireDataDirLock(dir)).toThrow(DataDirLockedError);
    release();
    acquireDataDirLock(dir)();
  });

  it('takes over a lock naming this very pid from an earlier run (kas as pid 1, SIGKILLed and restarted)', () => {
    const dir = fresh();
    const earlierRun = {
      pid: process.pid,
      started: processStartTime(process.pid),
      origin: performance.timeOrigin - 60_000,
    };
    writeFileSync(join(dir, 'kas.lock'), JSON.stringify(earlierRun));
    acquireDataDirLock(dir)();
    writeFileSync(join(dir, 'kas.lock'), String(process.pid));
    acquireDataDirLock(dir)();
  });

  it.runIf(processStartTime(process.pid) !== null)(
    'takes over a lock whose pid was reused by another live process',
    async () => {
      const other = spawn('sleep', ['30']);
      try {
        await new Promise((resolve) => other.once('spawn', resolve));
        const dir = fresh();
        const started = processStartTime(other.pid!)!;
        writeFileSync(
          join(dir, 'kas.lock'),
          JSON.stringify({ pid: other.pid, started: started - 1000, origin: 1 }),
        );
        acquireDataDirLock(dir)();
        // The same live process with its real start time holds the lock.
        writeFileSync(join(dir, 'kas.lock'), JSON.stringify({ pid: other.pid, started, origin: 1 }));
        expect(() => acquireDataDirLock(dir)).toThrow(/in use by another kas process/);
      } finally {
        other.kill();
      }
    },
  );
});
