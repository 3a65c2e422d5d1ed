import { describe, expect, it } from 'vitest';
import { configFrom } from './config.ts';
import { tunedRestart } from './memory.ts';

describe('memory settings', () => {
  it('restarts once with a small young generation, the heap cap when set, and glibc’s fixed mmap threshold', () => {
    const restart = tunedRestart(configFrom({ KAS_MAX_HEAP_MB: '512' }), [], {});
    expect(restart?.flags).toEqual(['--max-semi-space-size=8', '--max-old-space-size=512']);
    if (process.platform === 'linux') expect(restart?.env.MALLOC_MMAP_THRESHOLD_).toBe('131072');
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

  it('does nothing with KAS_MEMORY_TUNING=false, and refuses a heap cap too small to run kas', () => {
    expect(
      tunedRestart(configFrom({ KAS_MEMORY_TUNING: 'false', KAS_MAX_HEAP_MB: '512' }), [], {}),
    ).toBeNull();
    expect(() => configFrom({ KAS_MAX_HEAP_MB: '64' })).toThrow(/KAS_MAX_HEAP_MB.*at least 128/);
  });
});
