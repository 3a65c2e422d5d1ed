import { ENGLISH_STOP_WORDS } from './stop-words.ts';

const STOP_WORDS = new Set(ENGLISH_STOP_WORDS);

/**
 * The words of a query worth marking: the index drops stop words, so "how", "do", "I", "the" of a
 * question matched nothing, and marking them everywhere hid the words that did match (and cost most of
 * the marking: 1.19 → 0.32 ms for a chat question's 25 chunks). A query of stop words only keeps them.
 */
export function wordsToMark(words: string[]): string[] {
  const content = words.filter((w) => !STOP_WORDS.has(w.toLowerCase()));
  return content.length ? content : words;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Excerpts reach this many characters either side of a match. */
const CONTEXT_CHARS = 60;

/** A letter or a digit (`\p{L}`, `\p{N}`): what words are made of. Compiled once, not per search. */
const WORD_CHARACTER = /[\p{L}\p{N}]/u;

function isWordCodePoint(code: number): boolean {
  if (code < 0x80) return (code >= 48 && code <= 57) || ((code | 32) >= 97 && (code | 32) <= 122);
  return WORD_CHARACTER.test(String.fromCodePoint(code));
}

/**
 * The code point starting at `index` (a lone surrogate stands for itself). Not `codePointAt`: in
 * Node 24.21 (V8), once optimised, it reads past the end of a sliced string into the string it was
 * sliced from, so a high surrogate at an excerpt's end became a whole letter (found by this module's
 * generated test).
 */
function codePointAt(text: string, index: number): number {
  const code = text.charCodeAt(index);
  if (code < 0xd800 || code > 0xdbff || index + 1 >= text.length) return code;
  const low = text.charCodeAt(index + 1);
  return low >= 0xdc00 && low <= 0xdfff ? (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000 : code;
}

/** Whether the code point ending just before `index` is a letter or a digit. */
function wordBefore(text: string, index: number): boolean {
  if (index === 0) return false;
  const code = text.charCodeAt(index - 1);
  if (code >= 0xdc00 && code <= 0xdfff && index >= 2) {
    const pair = codePointAt(text, index - 2);
    if (pair > 0xffff) return isWordCodePoint(pair);
  }
  return isWordCodePoint(code);
}

/** Where the word that continues at `index` ends. */
function wordEnd(text: string, index: number): number {
  let end = index;
  while (end < text.length) {
    const code = codePointAt(text, end);
    if (!isWordCodePoint(code)) break;
    end += code > 0xffff ? 2 : 1;
  }
  return end;
}

/**
 * Marks the query's words in retrieved text: `highlighter(words)(content)` gives up to `max` excerpts
 * around the words, matches wrapped in `<hi></hi>`. Words match on a crude stem ("clusters" also marks
 * "cluster"), case-insensitively, from the start of a word to its end: what the Unicode,
 * case-insensitive pattern `(?<![\p{L}\p{N}])(?:stem|…)[\p{L}\p{N}]*` finds, scanning the text.
 *
 * Built once per search and applied to every chunk shown, without that pattern: compiling it for each
 * search's words, and running its look-behind at every position, cost more than the rest of an admin
 * search's own work. Where a match may start is found with `indexOf` on the lower-cased text; the
 * word boundaries are checked there. The only difference from the pattern: text whose lower case is
 * not its case folding (the long s "ſ") is not matched, as it would not be by most search engines
 * either. Text or words whose lower case changes length are scanned with the pattern itself.
 */
export function highlighter(words: string[], max = 3): (content: string) => string[] {
  const stems = [...new Set(words.map((w) => (w.length > 5 ? w.slice(0, w.length - 2) : w)))].filter(Boolean);
  if (!stems.length) return () => [];
  let pattern: RegExp | undefined;
  const slowPattern = () =>
    (pattern ??= new RegExp(
      `(?<![\\p{L}\\p{N}])(?:${stems.map(escapeRegExp).join('|')})[\\p{L}\\p{N}]*`,
      'giu',
    ));
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
  /** The pattern's matches in `text` (`lower` is its lower case), as a global scan finds them. */
  const matches = function* (text: string, lower: string | null): Generator<{ index: number; end: number }> {
    if (lower === null) {
      for (const m of text.matchAll(slowPattern())) yield { index: m.index, end: m.index + m[0].length };
      return;
    }
    let after = 0;
    for (const index of candidates(lower)) {
      if (index < after || wordBefore(text, index)) continue;
      // The pattern's alternatives are tried in order: the first stem found here is the match's.
      const needle = needles.find((n) => lower.startsWith(n, index))!;
      after = wordEnd(text, index + needle.length);
      yield { index, end: after };
    }
  };
  /** `text` with the pattern's matches wrapped in `<hi></hi>`. */
  const marked = (text: string, lower: string | null): string => {
    let out = '';
    let from = 0;
    for (const m of matches(text, lower)) {
      out += `${text.slice(from, m.index)}<hi>${text.slice(m.index, m.end)}</hi>`;
      from = m.end;
    }
    return out + text.slice(from);
  };

  return (content) => {
    if (!content) return [];
    const folded = content.toLowerCase();
    // Positions in the lower case are positions in the text only when no character changed length.
    const lower = exact && folded.length === content.length ? folded : null;
    const excerpts: string[] = [];
    let lastEnd = -1;
    for (const match of matches(content, lower)) {
      if (match.index < lastEnd) continue;
      const start = Math.max(0, match.index - CONTEXT_CHARS);
      const end = Math.min(content.length, match.end + CONTEXT_CHARS);
      // The excerpt is scanned on its own, as a piece of text: a word cut at its start can match.
      const piece = marked(content.slice(start, end), lower === null ? null : lower.slice(start, end));
      excerpts.push(
        `${start > 0 ? '…' : ''}${piece.replace(/\s+/g, ' ').trim()}${end < content.length ? '…' : ''}`,
      );
      lastEnd = end;
      if (excerpts.length >= max) break;
    }
    return excerpts;
  };
}
