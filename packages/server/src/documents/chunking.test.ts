import { createRequire } from 'node:module';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
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

  it('counts any text as the tokenizer counts its pieces, the first time and from its table of pieces', () => {
    const tokenizer = createRequire(import.meta.url)('gpt-tokenizer') as typeof import('gpt-tokenizer');
    // Each piece the pre-tokenizer makes, encoded alone (long ones in the same 200-character slices).
    const reference = (text: string) => {
      let total = 0;
      for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX))
        for (let i = 0; i < piece.length; i += 200) total += tokenizer.countTokens(piece.slice(i, i + 200));
      return total;
    };
    let seed = 7;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const alphabet = [
      ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789',
      ...'     \n\n\t.,;:!?\'"()-_/',
      'é',
      'ß',
      'Ж',
      'я',
      '中',
      '文',
      '語',
      'ا',
      'ب',
      '\u0301',
      '😀',
      '👍🏽',
      '€',
      '\u00a0',
    ];
    const texts = [
      '',
      ' ',
      "It's a dog's life, isn't it? They'll say we've won.",
      `${'x'.repeat(450)} tail`,
      `${' '.repeat(300)}word`,
      Array.from({ length: 40 }, (_, i) => `Item ${i * 1234}: naïve café — ${'😀'.repeat(i % 4)}`).join('\n'),
      ...Array.from({ length: 200 }, () =>
        Array.from(
          { length: 1 + Math.floor(next() * 300) },
          () => alphabet[Math.floor(next() * alphabet.length)],
        ).join(''),
      ),
    ];
    for (const text of texts) {
      const expected = reference(text);
      expect(countTokens(text), JSON.stringify(text.slice(0, 80))).toBe(expected);
      expect(countTokens(text)).toBe(expected);
    }
  });
});
