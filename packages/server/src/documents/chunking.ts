import { createRequire } from 'node:module';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { AppError } from '../errors.ts';

type Tokenizer = typeof import('gpt-tokenizer');
let tokenizer: Tokenizer | undefined;
const require = createRequire(import.meta.url);

/** The o200k tokenizer: ~70 MB once loaded, so it is loaded on first use, not when kas starts. */
function bpe(): Tokenizer {
  tokenizer ??= require('gpt-tokenizer') as Tokenizer;
  return tokenizer;
}

let asciiRanks: Map<string, number> | undefined;

/**
 * The rank of each token that is ASCII throughout, by its text: from the ranks the tokenizer itself
 * loads (the same module, not a second copy), ~130k entries (~4 MB), built on first use in ~50 ms.
 */
function ranksOfAscii(): Map<string, number> {
  if (asciiRanks) return asciiRanks;
  const ranks = (require('gpt-tokenizer/bpeRanks/o200k_base') as { default: (string | number[])[] }).default;
  asciiRanks = new Map();
  for (let rank = 0; rank < ranks.length; rank++) {
    const token = ranks[rank];
    if (typeof token === 'string' && !NON_ASCII.test(token)) asciiRanks.set(token, rank);
  }
  return asciiRanks;
}

const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The token count of a piece that is ASCII throughout: the tokenizer's byte-pair merges (the adjacent
 * pair of lowest rank first, until no pair is a token) over its characters, which are its bytes. The
 * library's own way, for a piece its table has not seen, spent more time in its generic steps (the split
 * pattern again, special tokens, bytes decoded back to strings for each lookup) than in the merges:
 * ~6 % of kas's CPU in batch ingestion of real text. Exact: the tests compare it with the library.
 */
function countAscii(piece: string): number {
  const ranks = ranksOfAscii();
  if (piece.length < 2 || ranks.has(piece)) return 1;
  const rankOf = (from: number, to: number | undefined) =>
    to === undefined
      ? Number.POSITIVE_INFINITY
      : (ranks.get(piece.slice(from, to)) ?? Number.POSITIVE_INFINITY);
  // Part i spans starts[i]..starts[i + 1]; pairRanks[i] is the rank of parts i and i + 1 merged.
  const starts: number[] = [];
  const pairRanks: number[] = [];
  for (let i = 0; i <= piece.length; i++) {
    starts.push(i);
    pairRanks.push(i < piece.length - 1 ? rankOf(i, i + 2) : Number.POSITIVE_INFINITY);
  }
  while (starts.length > 2) {
    let lowest = Number.POSITIVE_INFINITY;
    let at = -1;
    for (let i = 0; i < pairRanks.length - 1; i++)
      if (pairRanks[i]! < lowest) {
        lowest = pairRanks[i]!;
        at = i;
      }
    if (at < 0) break;
    starts.splice(at + 1, 1);
    pairRanks.splice(at, 1);
    pairRanks[at] = rankOf(starts[at]!, starts[at + 2]);
    if (at > 0) pairRanks[at - 1] = rankOf(starts[at - 1]!, starts[at + 1]);
  }
  return starts.length - 1;
}

/** Tokens per chunk, title included (the reference's embedding context size). */
export const CHUNK_TOKENS = 512;
/** Tokens of a blurb, and the most of a title carried into each chunk. */
export const BLURB_TOKENS = 128;
/** Below this many content tokens per chunk the title is not counted against the budget. */
const MIN_CONTENT_TOKENS = 256;

export interface ChunkSection {
  text: string;
  link?: string | null | undefined;
}

export interface Chunk {
  chunk_id: number;
  /** The document title, carried into every chunk for ranking. */
  title: string;
  content: string;
  blurb: string;
  /** Link of the first section in this chunk, for citations. */
  link: string | null;
  /** Character offset in `content` → link of the section that starts there. */
  section_links: Record<string, string>;
  token_count: number;
  /**
   * The chunk's tsvector as text, when computed before its write (the text thread, db/text-thread.ts);
   * otherwise its insert statement computes it.
   */
  vector?: string;
}

/**
 * Sentence ends: terminal punctuation (and closing quotes) followed by whitespace, or a line break.
 * Matched forwards: a look-behind over the whitespace (`(?<=[.!?]\s+)`) scanned the run again at each
 * of its positions, quadratic in its length (80k spaces took 8 s).
 */
const SENTENCE_END = /[.!?。！？]["'”’)\]]*(\s+)|\n/dgu;

/**
 * Splits text into sentences that concatenate back to exactly the text (a regex: Intl.Segmenter is
 * slower). After punctuation, each character of the whitespace that follows ends a piece.
 */
export function sentencesOf(text: string): string[] {
  const sentences: string[] = [];
  let start = 0;
  const cut = (end: number) => {
    if (end > start) sentences.push(text.slice(start, end));
    start = end;
  };
  for (const match of text.matchAll(SENTENCE_END)) {
    const space = match.indices?.[1];
    if (!space) {
      cut(match.index + 1);
      continue;
    }
    for (let end = space[0] + 1; end <= space[1]; end++) cut(end);
  }
  cut(text.length);
  return sentences;
}

/**
 * Byte-pair encoding costs the square of a piece's length: one 300 KB "word" (base64, a minified line)
 * took ~50 s and froze the server. Longer pieces are encoded in slices of this many characters, which
 * keeps the work linear; their count may exceed the exact one by a token per slice (never less).
 */
const MAX_PIECE_CHARS = 200;

/** The pre-tokenizer's pieces of `text`, long ones sliced (never inside a surrogate pair). */
function* piecesOf(text: string): Generator<string> {
  for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    if (piece.length <= MAX_PIECE_CHARS) {
      yield piece;
      continue;
    }
    for (let start = 0; start < piece.length; ) {
      let end = Math.min(start + MAX_PIECE_CHARS, piece.length);
      const code = piece.charCodeAt(end - 1);
      if (end < piece.length && code >= 0xd800 && code <= 0xdbff) end--;
      yield piece.slice(start, end);
      start = end;
    }
  }
}

/** Tokens of `text`, encoded piece by piece (linear in its length). */
function encodeLinear(text: string): number[] {
  const tokens: number[] = [];
  for (const piece of piecesOf(text)) for (const token of bpe().encode(piece)) tokens.push(token);
  return tokens;
}

/**
 * The pre-tokenizer's pattern, sticky: `test` at a position matches the piece that starts there and moves
 * `lastIndex` to its end, without making a match array or the piece's string (`countTokens`).
 */
const PIECE_AT = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, 'yu');

/**
 * Token counts of pre-tokenizer pieces (words with their leading space), which text repeats a lot: an
 * open-addressing table in typed arrays, keyed by two hashes of the piece's characters computed in place.
 * A Map keyed by the pieces' strings spent ~20 % of kas's CPU during batch ingestion in its lookups
 * (hashing a new string for each piece, then reaching its entry and key across the heap); here a lookup
 * reads one slot of two numbers. Each slot holds a 32-bit hash, and a second 20-bit hash beside the count:
 * two different pieces are mistaken for each other only if 52 bits of hash agree (~1 in 10^15 lookups).
 */
const SLOTS = 1 << 17;
const PROBES = 8;
const COUNT_BITS = 12;
const COUNT_MASK = (1 << COUNT_BITS) - 1;
/** Per slot: the first hash, then the second hash's 20 bits above the count (0: an empty slot). */
const slots = new Int32Array(SLOTS * 2);

/**
 * The o200k token count of `text` (the tokenizer's default encoding), summed over the pieces its
 * pre-tokenizer splits text into — byte-pair encoding never merges across pieces, so the sum is exact —
 * with each distinct piece encoded once (the library's own cache is an LRU that costs more than it saves).
 */
export function countTokens(text: string): number {
  let total = 0;
  let start = 0;
  while (start < text.length) {
    PIECE_AT.lastIndex = start;
    // A gap the pattern does not cover (none is known): the rest piece by piece, as the tokenizer would.
    if (!PIECE_AT.test(text)) return total + countPieces(text.slice(start));
    const end = PIECE_AT.lastIndex;
    total +=
      end - start > MAX_PIECE_CHARS ? countPieces(text.slice(start, end)) : cachedCount(text, start, end);
    start = end;
  }
  return total;
}

/** The token count of the piece `text[start, end)`, from the table or encoded (and then remembered). */
function cachedCount(text: string, start: number, end: number): number {
  // FNV-1a and a multiplicative hash, over UTF-16 code units.
  let h1 = 0x811c9dc5;
  let h2 = 0x9747b28c;
  let codes = 0;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    codes |= code;
    h1 = Math.imul(h1 ^ code, 0x01000193);
    h2 = Math.imul(h2 + code, 0x5bd1e995) ^ (h2 >>> 15);
  }
  const tag = (h2 << COUNT_BITS) | 0;
  let slot = (h1 >>> 0) & (SLOTS - 1);
  let free = -1;
  for (let probe = 0; probe < PROBES; probe++, slot = (slot + 1) & (SLOTS - 1)) {
    const second = slots[2 * slot + 1]!;
    if (second === 0) {
      free = slot;
      break;
    }
    if (slots[2 * slot] === h1 && (second & ~COUNT_MASK) === tag) return second & COUNT_MASK;
  }
  const piece = text.slice(start, end);
  const count = codes < 0x80 ? countAscii(piece) : bpe().countTokens(piece);
  // Full probe run: the first slot is overwritten. A count the slot cannot hold is not remembered.
  if (count > 0 && count <= COUNT_MASK) {
    const at = free >= 0 ? free : (h1 >>> 0) & (SLOTS - 1);
    slots[2 * at] = h1;
    slots[2 * at + 1] = tag | count;
  }
  return count;
}

/** Tokens of `text` piece by piece, long pieces sliced (`piecesOf`), nothing remembered. */
function countPieces(text: string): number {
  let total = 0;
  for (const piece of piecesOf(text)) total += bpe().countTokens(piece);
  return total;
}

/**
 * `text` cut into consecutive parts of `max` tokens, the last one with the rest (at most `parts` of
 * them: then the last stops at its `max`th token): the parts decoding the text's tokens `max` at a time
 * gives, since tokens never cross the pre-tokenizer's pieces. Only a piece that a cut falls inside is
 * encoded; the others are counted (mostly from the table, `countTokens`) and kept as they are. Encoding
 * the whole text instead (a blurb's long first sentence, each time) was ~13 % of kas's CPU in batch
 * ingestion of real text.
 */
export function cutByTokens(text: string, max: number, parts = Number.POSITIVE_INFINITY): string[] {
  const out: string[] = [];
  // The current part: the decoded end of a piece that was cut, then text from `from` to `start`.
  let carried = '';
  let from = 0;
  let used = 0;
  let start = 0;
  while (start < text.length) {
    PIECE_AT.lastIndex = start;
    // A gap the pattern does not cover (none is known): the rest as one piece (as `countTokens` does).
    const matched = PIECE_AT.test(text);
    const end = matched ? PIECE_AT.lastIndex : text.length;
    const count =
      !matched || end - start > MAX_PIECE_CHARS
        ? countPieces(text.slice(start, end))
        : cachedCount(text, start, end);
    if (used + count <= max) {
      used += count;
      start = end;
      continue;
    }
    // A cut falls inside this piece: its tokens complete the part, fill whole ones, and open the next.
    const tokens = encodeLinear(text.slice(start, end));
    let at = max - used;
    out.push(carried + text.slice(from, start) + bpe().decode(tokens.slice(0, at)));
    for (; out.length < parts && tokens.length - at > max; at += max)
      out.push(bpe().decode(tokens.slice(at, at + max)));
    if (out.length >= parts) return out;
    carried = bpe().decode(tokens.slice(at));
    used = tokens.length - at;
    from = start = end;
  }
  if (used > 0 || start > from || !out.length) out.push(carried + text.slice(from));
  return out;
}

/** Splits a piece longer than `max` tokens on token boundaries. */
function splitByTokens(text: string, max: number): string[] {
  return cutByTokens(text, max);
}

function truncateToTokens(text: string, max: number): string {
  return cutByTokens(text, max, 1)[0] ?? '';
}

/** The first sentences of a chunk, up to BLURB_TOKENS. */
function blurbOf(sentences: { text: string; tokens: number }[]): string {
  let blurb = '';
  let used = 0;
  for (const sentence of sentences) {
    if (used + sentence.tokens > BLURB_TOKENS) {
      if (!blurb) blurb = truncateToTokens(sentence.text, BLURB_TOKENS);
      break;
    }
    blurb += sentence.text;
    used += sentence.tokens;
  }
  return blurb.trim();
}

/**
 * Sentence-aware chunking without overlap: sections are concatenated into chunks of at most
 * CHUNK_TOKENS (the title counts against the budget), never breaking a sentence unless the sentence
 * alone is too long. Each chunk remembers which section links start where. Always at least one chunk,
 * so a document without text can still be found by its title.
 */
export function chunkDocument(input: {
  title: string;
  sections: ChunkSection[];
  /** Most chunks (`KAS_MAX_DOCUMENT_CHUNKS`): chunking stops with a 413 as soon as there would be more. */
  maxChunks?: number;
  /** What the refusal calls the document. */
  subject?: string;
}): Chunk[] {
  const maxChunks = input.maxChunks ?? Number.POSITIVE_INFINITY;
  const title = truncateToTokens(input.title.replace(/\s+/g, ' ').trim(), BLURB_TOKENS);
  const titleTokens = countTokens(title);
  const budget = CHUNK_TOKENS - titleTokens >= MIN_CONTENT_TOKENS ? CHUNK_TOKENS - titleTokens : CHUNK_TOKENS;

  const chunks: Chunk[] = [];
  let content = '';
  let tokens = 0;
  let sentences: { text: string; tokens: number }[] = [];
  let links: Record<string, string> = {};
  let firstLink: string | null = null;

  const flush = () => {
    if (!content.trim() && chunks.length > 0) return;
    if (chunks.length >= maxChunks)
      throw new AppError(
        'PAYLOAD_TOO_LARGE',
        `${input.subject ?? 'The document'} has more than the limit of ${maxChunks} chunks of ${CHUNK_TOKENS} tokens (KAS_MAX_DOCUMENT_CHUNKS)`,
      );
    chunks.push({
      chunk_id: chunks.length,
      title,
      content: content.trim() ? content : '',
      blurb: blurbOf(sentences),
      link: firstLink,
      section_links: links,
      token_count: tokens,
    });
    content = '';
    tokens = 0;
    sentences = [];
    links = {};
    firstLink = null;
  };

  for (const section of input.sections) {
    const link = section.link || null;
    let sectionStarted = false;
    for (const sentence of sentencesOf(section.text)) {
      const count = countTokens(sentence);
      const pieces =
        count > budget
          ? splitByTokens(sentence, budget).map((p) => ({ text: p, tokens: countTokens(p) }))
          : [];
      if (!pieces.length) pieces.push({ text: sentence, tokens: count });
      for (const piece of pieces) {
        if (tokens + piece.tokens > budget && content) flush();
        if (!sectionStarted || !content) {
          // A section that continues into a new chunk keeps its link there too.
          if (content && !/\s$/.test(content)) {
            content += '\n';
            const last = sentences.at(-1);
            if (last) last.text += '\n';
          }
          if (link) {
            links[String(content.length)] = link;
            firstLink ??= link;
          }
          sectionStarted = true;
        }
        content += piece.text;
        tokens += piece.tokens;
        sentences.push(piece);
      }
    }
    if (!sectionStarted && link) {
      links[String(content.length)] ??= link;
      firstLink ??= link;
    }
  }
  if (content || chunks.length === 0) flush();
  return chunks;
}
