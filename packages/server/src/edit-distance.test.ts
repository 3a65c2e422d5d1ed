import { describe, expect, it } from 'vitest';
import { closest, editDistance, transpositionsOf } from './edit-distance.ts';

describe('edit distance', () => {
  it('counts a swap of neighbouring characters as one edit, like the other edits', () => {
    expect(editDistance('deamon', 'daemon')).toBe(1);
    expect(editDistance('recieve', 'receive')).toBe(1);
    expect(editDistance('kubernetas', 'kubernetes')).toBe(1);
    expect(editDistance('salaryes', 'salaries')).toBe(1);
    expect(editDistance('abcd', 'acbd')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('ab', 'ba')).toBe(1);
    expect(editDistance('ca', 'abc')).toBe(3);
  });

  it('lists the swaps of a word and picks the closest candidate', () => {
    expect(transpositionsOf('deamon')).toContain('daemon');
    expect(transpositionsOf('aab')).toEqual(['aba']);
    expect(closest('KAS_LOG_LEVLE', ['KAS_LOG_LEVEL', 'KAS_LOG_FORMAT'], 3)).toBe('KAS_LOG_LEVEL');
    expect(closest('KAS_NOTHING_LIKE_IT', ['KAS_LOG_LEVEL'], 3)).toBeUndefined();
  });
});
