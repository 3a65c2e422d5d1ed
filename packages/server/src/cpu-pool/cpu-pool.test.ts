import { afterAll, describe, expect, it } from 'vitest';
import { minimalPdf, trivialPagesPdf } from '../../../../test/harness/office-files.ts';
import { AppError } from '../errors.ts';
import { DEFAULT_EXTRACT_LIMITS } from '../files/files.parse.ts';
import { createCpuPool } from './cpu-pool.ts';

const pool = createCpuPool({ threads: 1, memoryMb: 256, timeoutMs: 60_000 });
afterAll(() => pool.close());

describe('cpu pool', () => {
  it('reads a file in a worker thread', async () => {
    const text = await pool.run('extractText', {
      name: 'a.pdf',
      contentType: 'application/pdf',
      data: new Uint8Array(minimalPdf(['Hello from a worker'])),
    });
    expect(text).toContain('Hello from a worker');
  });

  it("hands back the task's AppError with its code and detail", async () => {
    const error = await pool
      .run('extractText', { name: 'a.bin', contentType: 'application/octet-stream', data: new Uint8Array(3) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ error_code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    expect((error as AppError).detail).toContain('a.bin');
  });

  it('refuses a task that runs over its time limit with a 413 naming it, one that waited as long for a thread with a 503, and keeps working', async () => {
    // At the main thread's priority: on a loaded machine a thread of lower priority may not take up its
    // task within the short limit, which this test is not about.
    const hasty = createCpuPool({ threads: 1, memoryMb: 256, timeoutMs: 400, niceIncrement: 0 });
    // 10,000 pages read with no page limit: many seconds of work.
    const data = new Uint8Array(trivialPagesPdf(10_000));
    const limits = { ...DEFAULT_EXTRACT_LIMITS, maxPdfPages: 1_000_000 };
    const read = (name: string) =>
      hasty
        .run('extractText', { name, contentType: 'application/pdf', data, limits }, { subject: `"${name}"` })
        .catch((e: unknown) => e);
    try {
      // The thread started first: under load starting one (loading the parsers) can take longer than
      // the limit, and the first task's wait would end before it ran.
      // (A wait that ends first leaves the thread starting: the next try finds it.)
      for (let tries = 0; tries < 50; tries++) {
        const warm = await hasty.run('countTokens', { text: 'warm' }).catch(() => undefined);
        if (warm !== undefined) break;
      }
      // One thread: the second waits while the first runs, and its wait ends first.
      const [first, second] = await Promise.all([read('big.pdf'), read('next.pdf')]);
      expect(first).toMatchObject({ error_code: 'PAYLOAD_TOO_LARGE' });
      expect((first as AppError).detail).toMatch(/"big\.pdf".*KAS_WORKER_TIMEOUT_MS/);
      expect(second).toMatchObject({ error_code: 'SERVICE_UNAVAILABLE' });
      expect((second as AppError).detail).toMatch(/busy.*"next\.pdf"/);
    } finally {
      await hasty.close();
    }
    const text = await pool.run('extractText', {
      name: 'a.txt',
      contentType: 'text/plain',
      data: Buffer.from('still here'),
    });
    expect(text).toBe('still here');
  });
});
