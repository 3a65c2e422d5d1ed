import { describe, expect, it } from 'vitest';
import { chunkDocument, countTokens, sentencesOf } from './chunking.ts';

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

  it('splits sentences in time linear in a run of whitespace (a look-behind was quadratic: 80k spaces, 8 s)', () => {
    const text = `a${' '.repeat(200_000)}b. c.  d`;
    const started = performance.now();
    const sentences = sentencesOf(text);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(sentences.join('')).toBe(text);
    expect(sentences.at(-1)).toBe('d');
    // After punctuation, each whitespace character ends a piece (as before).
    expect(sentencesOf('One. Two!  "Three?" Four\nfive')).toEqual([
      'One. ',
      'Two! ',
      ' ',
      '"Three?" ',
      'Four\n',
      'five',
    ]);
  });

  it('counts ordinary text exactly as the tokenizer does', () => {
    expect(countTokens('Hello world, this is kas.')).toBe(7);
  });
});
