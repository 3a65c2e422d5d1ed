import { afterAll, describe, expect, it } from 'vitest';
import { minimalPdf } from '../../../../test/harness/office-files.ts';
import { AppError } from '../errors.ts';
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

  it('refuses a task over its time limit with a 413 naming the limit, and keeps working after', async () => {
    const hasty = createCpuPool({ threads: 1, memoryMb: 256, timeoutMs: 5 });
    try {
      // Thousands of pages: far more than 100 ms of work.
      const pages = Array.from({ length: 4000 }, (_, i) => `page ${i}`);
      const error = await hasty
        .run(
          'extractText',
          { name: 'big.pdf', contentType: 'application/pdf', data: new Uint8Array(minimalPdf(pages)) },
          { subject: '"big.pdf"' },
        )
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ error_code: 'PAYLOAD_TOO_LARGE' });
      expect((error as AppError).detail).toMatch(/"big\.pdf".*KAS_WORKER_TIMEOUT_MS/);
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
