/** A document a turn may cite, by its per-turn number. */
export interface CitableDocument {
  document_id: string;
  link: string | null;
}

export interface CitationOutput {
  /** Text to stream, markers rewritten to `[[n]](link)` (or removed). */
  text: string;
  /** Documents cited for the first time in this piece. */
  cited: Array<{ citation_number: number; document_id: string }>;
}

/** A marker as the processor renders it, `[[n]](link)`, with the space before it. */
const RENDERED = / ?\[\[\d+\]\]\([^)]*\)/g;

/** An answer as streamed (markers rendered by the processor) without its markers: `answer_citationless`. */
export function removeRenderedCitations(answer: string): string {
  return answer.replace(RENDERED, '');
}

const RENDERED_ONE = /\[\[(\d+)\]\]\([^)]*\)/g;

/**
 * A piece of an answer as streamed, each rendered marker `[[n]](link)` written back as the plain `[n]` the
 * model wrote, with where each stands in the returned text. Markers are whole within a piece (the
 * processor emits each at once), so pieces convert one at a time.
 */
export function plainMarkers(text: string): {
  text: string;
  markers: Array<{ citation_number: number; start: number; end: number }>;
} {
  const markers: Array<{ citation_number: number; start: number; end: number }> = [];
  let out = '';
  let last = 0;
  for (const match of text.matchAll(RENDERED_ONE)) {
    out += text.slice(last, match.index);
    const plain = `[${match[1]}]`;
    markers.push({ citation_number: Number(match[1]), start: out.length, end: out.length + plain.length });
    out += plain;
    last = match.index + match[0].length;
  }
  return { text: out + text.slice(last), markers };
}

const OPENERS = '[［【';
const MARKER = /^(?:\[\[|\[|［|【)\s*(\d{1,4}(?:\s*[,，]\s*\d{1,4})*)\s*(?:\]\]|\]|］|】)/;
const PARTIAL = /^(?:\[\[?|［|【)[\d\s,，]*\]?$/;
const MAX_MARKER = 40;

/**
 * Rewrites the citation markers of a streamed answer. Recognises `[n]`, `[n, m]`, `[[n]]` and full-width
 * brackets, holds back a piece that may still become a marker, leaves code alone, drops numbers that are no
 * document of this turn, and reports each document once, the first time it is cited.
 */
export class CitationProcessor {
  readonly cited = new Map<number, string>();
  private pending = '';
  private inCode = false;
  private lastChar = ' ';
  private plain = '';

  private readonly documents: ReadonlyMap<number, CitableDocument>;
  private readonly include: boolean;

  constructor(documents: ReadonlyMap<number, CitableDocument>, include: boolean) {
    this.documents = documents;
    this.include = include;
  }

  /** The answer without any citation markers. */
  get citationless(): string {
    return this.plain;
  }

  push(piece: string): CitationOutput {
    this.pending += piece;
    return this.drain(false);
  }

  flush(): CitationOutput {
    return this.drain(true);
  }

  private drain(final: boolean): CitationOutput {
    let out = '';
    const cited: CitationOutput['cited'] = [];
    const emit = (text: string, isMarker = false) => {
      if (!text) return;
      out += text;
      if (!isMarker) this.plain += text;
      this.lastChar = text.at(-1)!;
    };
    let buffer = this.pending;
    while (buffer.length) {
      if (this.inCode) {
        const end = buffer.indexOf('```');
        if (end === -1) {
          const keep = final ? 0 : trailingBackticks(buffer);
          emit(buffer.slice(0, buffer.length - keep));
          buffer = buffer.slice(buffer.length - keep);
          break;
        }
        emit(buffer.slice(0, end + 3));
        buffer = buffer.slice(end + 3);
        this.inCode = false;
        continue;
      }
      const next = firstSpecial(buffer);
      if (next === -1) {
        const keep = final ? 0 : trailingBackticks(buffer);
        emit(buffer.slice(0, buffer.length - keep));
        buffer = buffer.slice(buffer.length - keep);
        break;
      }
      emit(buffer.slice(0, next));
      buffer = buffer.slice(next);
      if (buffer.startsWith('```')) {
        emit('```');
        buffer = buffer.slice(3);
        this.inCode = true;
        continue;
      }
      if (buffer[0] === '`') {
        if (!final && buffer.length < 3 && /^`+$/.test(buffer)) break;
        emit('`');
        buffer = buffer.slice(1);
        continue;
      }
      const match = MARKER.exec(buffer);
      if (match) {
        // `[1](` is already a link written by the model; leave it as text.
        const numbers = match[1]!.split(/[,，]/).map((n) => Number(n.trim()));
        const known = numbers.filter((n) => this.documents.has(n));
        if (this.include && known.length) {
          let marker = /\s$/.test(this.lastChar) ? '' : ' ';
          for (const n of known) {
            const doc = this.documents.get(n)!;
            marker += `[[${n}]](${doc.link ?? ''})`;
            if (!this.cited.has(n)) {
              this.cited.set(n, doc.document_id);
              cited.push({ citation_number: n, document_id: doc.document_id });
            }
          }
          emit(marker, true);
        }
        buffer = buffer.slice(match[0].length);
        continue;
      }
      if (!final && buffer.length < MAX_MARKER && PARTIAL.test(buffer)) break;
      emit(buffer[0]!);
      buffer = buffer.slice(1);
    }
    this.pending = buffer;
    return { text: out, cited };
  }
}

function firstSpecial(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '`' || OPENERS.includes(c)) return i;
  }
  return -1;
}

function trailingBackticks(text: string): number {
  let n = 0;
  while (n < 2 && text[text.length - 1 - n] === '`') n++;
  return n;
}
