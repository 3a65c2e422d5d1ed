import { describe, expect, it } from 'vitest';
import { chunkDocument, countTokens } from './chunking.ts';

describe('chunking', () => {
  it('is linear in the length of one unbroken token (a 300 KB word does not freeze the server)', () => {
    const word = 'x'.repeat(300_000);
    const started = performance.now();
    const chunks = chunkDocument({ title: 'one long word', sections: [{ text: `before ${word} after` }] });
    const elapsed = performance.now() - started;
    // Byte-pair encoding of the whole word at once took ~50 s here; sliced it is linear.
    expect(elapsed).toBeLessThan(5_000);
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.map((c) => c.content).join('')).toContain('after');
    for (const chunk of chunks) expect(chunk.token_count).toBeLessThanOrEqual(512);
    expect(countTokens(word)).toBeGreaterThan(1_000);
  });

  it('counts ordinary text exactly as the tokenizer does', () => {
    expect(countTokens('Hello world, this is kas.')).toBe(7);
  });
});
