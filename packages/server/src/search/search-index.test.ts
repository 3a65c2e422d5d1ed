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

  it('finds the same words by character code as the Unicode pattern over the lowercased text does', () => {
    const VOCABULARY_WORD = /^\p{L}[\p{L}\p{N}]{2,39}$/u;
    const reference = (text: string) => [
      ...new Set(
        text
          .toLowerCase()
          .match(/[\p{L}\p{N}]+/gu)
          ?.filter((w) => VOCABULARY_WORD.test(w)),
      ),
    ];
    let seed = 3;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const pick = (chars: string[]) => chars[Math.floor(next() * chars.length)]!;
    const ascii = [..."aZqM09_-. \n\t\r@[`{/:'"];
    // Letters, a digit, marks, a sigma (lowercased by context), a dotted I (longer lowercased), spaces.
    const other = ['é', 'Σ', 'İ', 'Ж', '٣', '\u0301', '’', '→', '\u00a0', '\u2028', '中', '😀', 'ǅ'];
    for (let n = 0; n < 500; n++) {
      const text = Array.from({ length: Math.floor(next() * 200) }, () => {
        const r = next();
        return r < 0.6 ? pick([...'abcXYZ']) : r < 0.9 ? pick(ascii) : pick(other);
      }).join('');
      expect(correctionWordsOf([{ title: '', content: text }]), JSON.stringify(text)).toEqual(
        reference(text),
      );
    }
  });
});
