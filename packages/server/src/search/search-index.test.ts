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
});
