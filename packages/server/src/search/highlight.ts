function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Excerpts reach this many characters either side of a match. */
const CONTEXT_CHARS = 60;

/**
 * Marks the query's words in retrieved text: `highlighter(words)(content)` gives up to `max` excerpts
 * around the words, matches wrapped in `<hi></hi>`. Words match on a crude stem ("clusters" also marks
 * "cluster"), case-insensitively, from the start of a word to its end.
 *
 * Built once per search and applied to every chunk shown. Where a match may start is found with
 * `indexOf` on the lower-cased text, and only those places are tried with the pattern: scanning whole
 * chunks with a Unicode, case-insensitive pattern that looks behind at every position cost more than
 * the rest of an admin search's own work. The only difference from scanning with the pattern: text
 * whose lower case is not its case folding (the long s "ſ") is not matched, as it would not be by most
 * search engines either. Text whose lower case changes its length is scanned with the pattern.
 */
export function highlighter(words: string[], max = 3): (content: string) => string[] {
  const stems = [...new Set(words.map((w) => (w.length > 5 ? w.slice(0, w.length - 2) : w)))].filter(Boolean);
  if (!stems.length) return () => [];
  const source = `(?<![\\p{L}\\p{N}])(?:${stems.map(escapeRegExp).join('|')})[\\p{L}\\p{N}]*`;
  const pattern = new RegExp(source, 'giu');
  const at = new RegExp(source, 'iuy');
  const needles = stems.map((s) => s.toLowerCase());
  const exact = needles.every((n, i) => n.length === stems[i]!.length);

  /** Where a match may start, in order: every occurrence of a stem in the lower-cased text. */
  const candidates = (lower: string): number[] => {
    const found: number[] = [];
    for (const needle of needles) {
      for (let i = lower.indexOf(needle); i !== -1; i = lower.indexOf(needle, i + 1)) found.push(i);
    }
    return needles.length > 1 ? [...new Set(found)].sort((a, b) => a - b) : found;
  };
  const matches = function* (content: string): Generator<{ index: number; text: string }> {
    const lower = content.toLowerCase();
    if (!exact || lower.length !== content.length) {
      for (const m of content.matchAll(pattern)) yield { index: m.index, text: m[0] };
      return;
    }
    for (const index of candidates(lower)) {
      at.lastIndex = index;
      const m = at.exec(content);
      if (m) yield { index, text: m[0] };
    }
  };

  return (content) => {
    if (!content) return [];
    const excerpts: string[] = [];
    let lastEnd = -1;
    for (const match of matches(content)) {
      if (match.index < lastEnd) continue;
      const start = Math.max(0, match.index - CONTEXT_CHARS);
      const end = Math.min(content.length, match.index + match.text.length + CONTEXT_CHARS);
      const piece = content.slice(start, end).replace(pattern, (m) => `<hi>${m}</hi>`);
      excerpts.push(
        `${start > 0 ? '…' : ''}${piece.replace(/\s+/g, ' ').trim()}${end < content.length ? '…' : ''}`,
      );
      lastEnd = end;
      if (excerpts.length >= max) break;
    }
    return excerpts;
  };
}
