import { describe, expect, it } from 'vitest';
import { rng } from '../testing/random.ts';
import { highlighter, wordsToMark } from './highlight.ts';

/** The definition: scan the whole text with the pattern (what `highlighter` must give, faster). */
function scanned(content: string, words: string[], max = 3): string[] {
  if (!words.length || !content) return [];
  const escaped = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const stems = words.map((w) => (w.length > 5 ? w.slice(0, w.length - 2) : w));
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${stems.map(escaped).join('|')})[\\p{L}\\p{N}]*`, 'giu');
  const excerpts: string[] = [];
  let lastEnd = -1;
  for (const match of content.matchAll(pattern)) {
    if (match.index < lastEnd) continue;
    const start = Math.max(0, match.index - 60);
    const end = Math.min(content.length, match.index + match[0].length + 60);
    const piece = content.slice(start, end).replace(pattern, (m) => `<hi>${m}</hi>`);
    excerpts.push(
      `${start > 0 ? '…' : ''}${piece.replace(/\s+/g, ' ').trim()}${end < content.length ? '…' : ''}`,
    );
    lastEnd = end;
    if (excerpts.length >= max) break;
  }
  return excerpts;
}

describe('highlighter', () => {
  it('marks whole words from a stem, case-insensitively, in up to three excerpts', () => {
    const mark = highlighter(['clusters', 'wal']);
    expect(mark('A Cluster keeps its WAL; subclusters and walls do not.')).toEqual([
      'A <hi>Cluster</hi> keeps its <hi>WAL</hi>; subclusters and <hi>walls</hi> do not.',
    ]);
    const long = `${'filler '.repeat(30)}replication ${'filler '.repeat(30)}`;
    const excerpts = highlighter(['replication'], 2)(long.repeat(3));
    expect(excerpts).toHaveLength(2);
    expect(excerpts[0]).toMatch(/^….*<hi>replication<\/hi>.*…$/);
    expect(highlighter([])('anything')).toEqual([]);
    expect(highlighter(['x'])('')).toEqual([]);
  });

  it('marks the searched words of a question, not its stop words, unless it has nothing else', () => {
    const words = wordsToMark(['How', 'do', 'I', 'vacuum', 'the', 'table']);
    expect(words).toEqual(['vacuum', 'table']);
    expect(highlighter(words)('I vacuum the table.')).toEqual(['I <hi>vacuum</hi> the <hi>table</hi>.']);
    expect(wordsToMark(['to', 'be', 'or', 'not'])).toEqual(['to', 'be', 'or', 'not']);
  });

  it('gives what scanning the whole text with the pattern gives, on generated text', () => {
    const random = rng(5);
    const pieces = [
      'index',
      'Indexes',
      'INDEXING',
      'pg_hba',
      'c++',
      'straße',
      'STRASSE',
      'Ölung',
      'ölung',
      'İstanbul',
      'naïve',
      'NAÏVE',
      '東京',
      '𝐀𝐁',
      'x𝟙',
      '😀',
      '\u212Aey',
      '数据库',
      'αβγ',
      'ΑΒΓ',
      'x',
      'xx',
      '12',
      'a1',
      '',
      '-',
      '.',
      '\n',
      '  ',
      '(',
      '…',
    ];
    const pick = () => pieces[Math.floor(random() * pieces.length)]!;
    for (let n = 0; n < 3000; n++) {
      const content = Array.from({ length: Math.floor(random() * 80) }, () =>
        random() < 0.5 ? ` ${pick()}` : pick(),
      ).join('');
      const words = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick().toLowerCase()).filter(
        Boolean,
      );
      const max = 1 + Math.floor(random() * 4);
      expect(highlighter(words, max)(content), JSON.stringify({ content, words, max })).toEqual(
        scanned(content, words, max),
      );
    }
  });
});
