import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { serve, stop, stopAllProcesses, tempDir } from '../harness/process.ts';

afterAll(stopAllProcesses);

const procFile = (pid: number, name: string) => readFileSync(`/proc/${pid}/${name}`, 'utf8');
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(procFile(pid, 'status'))?.[1]) / 1024;
const listening = (output: string) =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; heap_limit_mb?: number })
    .find((l) => l.msg === 'kas is listening');

describe.skipIf(process.platform !== 'linux')('kas process memory settings', () => {
  it('kas serve restarts itself in place with its memory settings, stays small when idle and still stops cleanly', async () => {
    const running = await serve(
      { KAS_DATA_DIR: tempDir(), KAS_MAX_HEAP_MB: '300', KAS_LOG_FORMAT: 'json' },
      30_000,
    );
    const pid = running.child.pid!;
    // Same pid (the test's child handle still owns it), now with V8's options and glibc's setting.
    const argv = procFile(pid, 'cmdline').split('\0');
    expect(argv).toContain('--max-semi-space-size=8');
    expect(argv).toContain('--max-old-space-size=300');
    expect(procFile(pid, 'environ').split('\0')).toContain('MALLOC_MMAP_THRESHOLD_=131072');
    const limit = listening(running.output())?.heap_limit_mb ?? 0;
    expect(limit).toBeGreaterThanOrEqual(300);
    expect(limit).toBeLessThan(400);
    // Idle after a first start (database created, migrated): was 505–680 MB before these settings.
    expect(rssMb(pid)).toBeLessThan(400);
    expect((await fetch(`${running.url}/api/health`)).status).toBe(200);
    expect(await stop(running.child)).toBe(0);
  });

  it('KAS_MEMORY_TUNING=false starts with Node’s defaults', async () => {
    const running = await serve(
      { KAS_DATA_DIR: tempDir(), KAS_MEMORY_TUNING: 'false', KAS_LOG_FORMAT: 'json' },
      30_000,
    );
    const argv = procFile(running.child.pid!, 'cmdline').split('\0');
    expect(argv.some((a) => a.startsWith('--max-semi-space-size'))).toBe(false);
    expect(listening(running.output())?.heap_limit_mb).toBeGreaterThan(1000);
    expect(await stop(running.child)).toBe(0);
  });
});
