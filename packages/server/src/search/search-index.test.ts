import { describe, expect, it } from 'vitest';
import { correctionWordsOf } from './search-index.ts';

describe('correctionWordsOf', () => {
  it('finds the distinct words of three to forty letters and digits, lowercased, a letter first', () => {
    const chunks = [
      { title: 'The VACUUM guide', content: 'Run VACUUM (FULL) on t1; 2nd pass: x86_64 ok, naïve café.' },
      { title: 'The VACUUM guide', content: `vacuum AGAIN ${'a'.repeat(41)} ${'b'.repeat(40)} abc123 12ab` },
    ];
    expect(correctionWordsOf(chunks)).toEqual([
      'the',
      'vacuum',
      'guide',
      'run',
      'full',
      'pass',
      'x86',
      'naïve',
      'café',
      'again',
      'b'.repeat(40),
      'abc123',
    ]);
  });

  it('finds the same words in ASCII text by character codes as the Unicode pattern does', () => {
    let seed = 3;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const alphabet = 'aZqM09_-. \n\t@[`{/:'.split('');
    for (let n = 0; n < 300; n++) {
      const text = Array.from({ length: Math.floor(next() * 200) }, () =>
        next() < 0.7 ? 'abcXYZ'[Math.floor(next() * 6)] : alphabet[Math.floor(next() * alphabet.length)],
      ).join('');
      // One non-ASCII character (a word too short to count) sends the text down the Unicode pattern's way.
      const unicode = correctionWordsOf([{ title: '', content: `${text} é` }]);
      expect(correctionWordsOf([{ title: '', content: text }]), JSON.stringify(text)).toEqual(unicode);
    }
  });
});
