import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirLockedError extends Error {}

/** What the lock file records: the process id, and what tells this process from a later one with the same id. */
interface LockOwner {
  pid: number;
  /** The kernel's start time of the process (Linux `/proc/<pid>/stat`), or null where unknown. */
  started: number | null;
  /** This process's time origin: unique per run even when the pid is reused (kas as pid 1 in a container). */
  origin: number;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
export function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const started = Number(fields[19]);
    return Number.isFinite(started) ? started : null;
  } catch {
    return null;
  }
}

function readOwner(path: string): LockOwner | null {
  const text = readFileSync(path, 'utf8').trim();
  try {
    const owner = JSON.parse(text) as Partial<LockOwner>;
    if (typeof owner === 'number') return { pid: owner, started: null, origin: Number.NaN };
    if (Number.isInteger(owner.pid))
      return { pid: owner.pid as number, started: owner.started ?? null, origin: owner.origin ?? Number.NaN };
  } catch {}
  return null;
}

/** Whether the recorded owner is a process that runs now: not merely a live process that reuses its pid. */
function ownerRuns(owner: LockOwner): boolean {
  if (owner.pid === process.pid) return owner.origin === performance.timeOrigin;
  if (!isAlive(owner.pid)) return false;
  const started = processStartTime(owner.pid);
  return owner.started === null || started === null || started === owner.started;
}

/**
 * Takes an exclusive lock on a PGlite data directory. Two processes on one data directory corrupt it
 * silently, so a second process must fail at once; a lock left by a process that no longer runs is
 * taken over, including one whose pid now belongs to another process (a reused pid, or kas restarted
 * as pid 1 in a container after a SIGKILL).
 */
export function acquireDataDirLock(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'kas.lock');
  const me: LockOwner = {
    pid: process.pid,
    started: processStartTime(process.pid),
    origin: performance.timeOrigin,
  };
  const record = JSON.stringify(me);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, record);
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(path, 'utf8') === record) rmSync(path);
        } catch {}
        process.off('exit', release);
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readOwner(path);
      if (owner && ownerRuns(owner)) {
        if (owner.pid === process.pid)
          throw new DataDirLockedError(`The data directory ${dataDir} is already open in this process.`);
        throw new DataDirLockedError(
          `The data directory ${dataDir} is in use by another kas process (pid ${owner.pid}). ` +
            'Stop that process, or set KAS_DATA_DIR to another directory, or use DATABASE_URL for several processes.',
        );
      }
      rmSync(path, { force: true });
    }
  }
  throw new DataDirLockedError(`Could not lock the data directory ${dataDir}.`);
}
