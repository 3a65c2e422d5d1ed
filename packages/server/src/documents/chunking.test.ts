import { createRequire } from 'node:module';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { describe, expect, it } from 'vitest';
import { rng } from '../testing/random.ts';
import { chunkDocument, countTokens, cutByTokens, sentencesOf } from './chunking.ts';

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
    const next = rng(7);
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

  it('cuts text on token boundaries as decoding its tokens a slice at a time does', () => {
    const tokenizer = createRequire(import.meta.url)('gpt-tokenizer') as typeof import('gpt-tokenizer');
    // Each piece encoded alone, long ones in 200-character slices (as `countTokens` counts them).
    const tokensOf = (text: string) =>
      [...text.matchAll(O200K_TOKEN_SPLIT_REGEX)].flatMap(([piece]) =>
        Array.from({ length: Math.ceil(piece.length / 200) }, (_, i) =>
          tokenizer.encode(piece.slice(i * 200, i * 200 + 200)),
        ).flat(),
      );
    // What kas did before: the whole text encoded, `max` tokens decoded at a time.
    const reference = (text: string, max: number) => {
      const tokens = tokensOf(text);
      const parts: string[] = [];
      for (let i = 0; i < tokens.length; i += max) parts.push(tokenizer.decode(tokens.slice(i, i + max)));
      return parts;
    };
    const next = rng(11);
    const words = [
      'the',
      ' index',
      ' vacuum',
      'ing',
      '.',
      ', ',
      '\n',
      ' 12345',
      ' naïve',
      ' 中文語',
      ' Жя',
      ' 😀',
      '  ',
      "'s",
    ];
    const texts = [
      'Hello world, this is kas.',
      `${'x'.repeat(450)} tail`,
      `one ${'abcdefghij'.repeat(60)} two three`,
      ...Array.from({ length: 150 }, () =>
        Array.from(
          { length: 1 + Math.floor(next() * 400) },
          () => words[Math.floor(next() * words.length)],
        ).join(''),
      ),
    ];
    for (const text of texts)
      for (const max of [1, 3, 7, 128, 512]) {
        const expected = reference(text, max);
        const label = `${JSON.stringify(text.slice(0, 60))} by ${max}`;
        expect(cutByTokens(text, max), label).toEqual(expected);
        expect(cutByTokens(text, max, 1)[0], label).toBe(expected.length > 1 ? expected[0] : text);
      }
  });
});
