import { describe, expect, it } from 'vitest';
import { configFrom } from './config.ts';
import {
  heapGrowthPercent,
  optimizesWasm,
  TEXT_THREAD_MIN_BYTES,
  tunedRestart,
  usesTextThread,
  WASM_OPTIMIZE_MIN_BYTES,
} from './memory.ts';

const GiB = 2 ** 30;

describe('memory settings', () => {
  it('restarts once with a small young generation, the heap cap when set, and glibc’s fixed mmap threshold', () => {
    const restart = tunedRestart(configFrom({ KAS_MAX_HEAP_MB: '512' }), [], {}, 8 * GiB);
    expect(restart?.flags).toEqual(['--max-semi-space-size=8', '--max-old-space-size=512']);
    if (process.platform === 'linux') expect(restart?.env.MALLOC_MMAP_THRESHOLD_).toBe('131072');
    // With Postgres (no database in the process) a larger young generation, unless set.
    const postgres = {
      DATABASE_URL: 'postgres://kas@localhost/kas',
      KAS_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
    };
    expect(tunedRestart(configFrom(postgres), [], {}, 8 * GiB)?.flags).toEqual(['--max-semi-space-size=32']);
    expect(
      tunedRestart(configFrom({ ...postgres, KAS_HEAP_SEMI_SPACE_MB: '0' }), [], {}, 8 * GiB)?.flags,
    ).toEqual([]);
    // The old generation's growth: kas's bound on the embedded database, V8's own with Postgres, unless set.
    expect(heapGrowthPercent(configFrom({}))).toBe(30);
    expect(heapGrowthPercent(configFrom(postgres))).toBe(0);
    expect(heapGrowthPercent(configFrom({ ...postgres, KAS_HEAP_GROWTH_PERCENT: '50' }))).toBe(50);
    // The restarted process carries the mark and does not restart again.
    expect(tunedRestart(configFrom({}), [], restart?.env ?? {})).toBeNull();
  });

  it('keeps options given on the command line and the operator’s own allocator setting', () => {
    const restart = tunedRestart(
      configFrom({ KAS_MAX_HEAP_MB: '512', KAS_HEAP_SEMI_SPACE_MB: '4' }),
      ['--max-old-space-size=2048'],
      { MALLOC_MMAP_THRESHOLD_: '65536' },
    );
    expect(restart?.flags).toEqual(['--max-semi-space-size=4']);
    expect(restart?.env.MALLOC_MMAP_THRESHOLD_).toBeUndefined();
  });

  it('keeps the embedded database’s WebAssembly off V8’s optimising compiler when asked, or by default with under 1.5 GiB', () => {
    const flags = (env: Record<string, string>, limit: number, execArgv: string[] = []) =>
      tunedRestart(configFrom(env), execArgv, {}, limit)?.flags ?? [];
    // auto: by the memory the process may use
    expect(flags({}, 8 * GiB)).not.toContain('--liftoff-only');
    expect(flags({}, GiB)).toContain('--liftoff-only');
    expect(optimizesWasm(configFrom({}), WASM_OPTIMIZE_MIN_BYTES)).toBe(true);
    expect(optimizesWasm(configFrom({}), WASM_OPTIMIZE_MIN_BYTES - 1)).toBe(false);
    // explicit either way
    expect(flags({ KAS_WASM_OPTIMIZE: 'false' }, 8 * GiB)).toEqual([
      '--max-semi-space-size=8',
      '--liftoff-only',
    ]);
    expect(flags({ KAS_WASM_OPTIMIZE: 'true' }, GiB)).not.toContain('--liftoff-only');
    // not twice, and not at all with Postgres (no WebAssembly database) or with tuning off
    expect(flags({ KAS_WASM_OPTIMIZE: 'false' }, GiB, ['--liftoff-only'])).not.toContain('--liftoff-only');
    const postgres = {
      DATABASE_URL: 'postgres://kas@localhost/kas',
      KAS_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
    };
    expect(flags({ ...postgres, KAS_WASM_OPTIMIZE: 'false' }, GiB)).not.toContain('--liftoff-only');
    expect(
      tunedRestart(configFrom({ KAS_MEMORY_TUNING: 'false', KAS_WASM_OPTIMIZE: 'false' }), [], {}, GiB),
    ).toBeNull();
    expect(() => configFrom({ KAS_WASM_OPTIMIZE: 'sometimes' })).toThrow(/KAS_WASM_OPTIMIZE/);
  });

  it('does nothing with KAS_MEMORY_TUNING=false, and refuses a heap cap too small to run kas', () => {
    expect(
      tunedRestart(configFrom({ KAS_MEMORY_TUNING: 'false', KAS_MAX_HEAP_MB: '512' }), [], {}),
    ).toBeNull();
    expect(() => configFrom({ KAS_MAX_HEAP_MB: '64' })).toThrow(/KAS_MAX_HEAP_MB.*at least 128/);
  });

  it('runs the text thread with two cores and 3 GiB by default, when asked, and never with Postgres', () => {
    expect(usesTextThread(configFrom({}), TEXT_THREAD_MIN_BYTES, 2)).toBe(true);
    expect(usesTextThread(configFrom({}), TEXT_THREAD_MIN_BYTES - 1, 2)).toBe(false);
    expect(usesTextThread(configFrom({}), 8 * GiB, 1)).toBe(false);
    expect(usesTextThread(configFrom({ KAS_PGLITE_TEXT_THREAD: 'true' }), GiB, 1)).toBe(true);
    expect(usesTextThread(configFrom({ KAS_PGLITE_TEXT_THREAD: 'false' }), 8 * GiB, 4)).toBe(false);
    const postgres = configFrom({
      DATABASE_URL: 'postgres://kas@localhost/kas',
      KAS_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
      KAS_PGLITE_TEXT_THREAD: 'true',
    });
    expect(usesTextThread(postgres, 8 * GiB, 4)).toBe(false);
  });
});
