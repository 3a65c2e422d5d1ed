/**
 * Web-search syntax, as people type it into a search box: `"exact phrase"`, `-excluded`,
 * `a or b`. Plain words are a weak AND: each one that a document contains adds to its rank, and a
 * missing one never empties the result. Phrases, exclusions and `or` groups are conditions. Parsed
 * once, then rendered for Postgres (`to_tsquery` text) or for Meilisearch.
 */
export interface QueryOperand {
  /** Lower-cased words; more than one means they must be adjacent (a phrase or a hyphenated word). */
  words: string[];
  phrase: boolean;
  negated: boolean;
}

/** Operands inside a group are ORed; groups are ANDed. */
export interface ParsedQuery {
  groups: QueryOperand[][];
  /** Words of positive operands, for highlighting and typo correction. */
  positiveWords: string[];
}

const WORD = /[\p{L}\p{N}]+/gu;
const TOKEN = /(-?)"([^"]*)"?|(\S+)/g;

function wordsOf(text: string): string[] {
  return (text.toLowerCase().match(WORD) ?? []).slice(0, 32);
}

export function parseQuery(query: string): ParsedQuery {
  const groups: QueryOperand[][] = [];
  let pendingOr = false;
  for (const match of query.slice(0, 1000).matchAll(TOKEN)) {
    let operand: QueryOperand;
    if (match[2] !== undefined) {
      operand = { words: wordsOf(match[2]), phrase: true, negated: match[1] === '-' };
    } else {
      const raw = match[3]!;
      if (raw.toLowerCase() === 'or') {
        pendingOr = groups.length > 0;
        continue;
      }
      const negated = raw.startsWith('-') && raw.length > 1;
      operand = { words: wordsOf(negated ? raw.slice(1) : raw), phrase: false, negated };
    }
    if (!operand.words.length) continue;
    const last = groups.at(-1);
    if (pendingOr && last) last.push(operand);
    else groups.push([operand]);
    pendingOr = false;
  }
  const positiveWords = [...new Set(groups.flat().flatMap((o) => (o.negated ? [] : o.words)))];
  return { groups, positiveWords };
}

export interface TsqueryOptions {
  /** `word:*` for words of 3+ characters that are not inside a quoted phrase. */
  prefix?: boolean;
  /** Restrict positive words to the title (weight A). */
  titleOnly?: boolean;
  /** Replacement words (typo corrections). */
  replace?: ReadonlyMap<string, string>;
  /** Only the conditions: phrases, exclusions and `or` groups (plain words rank, they do not filter). */
  conditionsOnly?: boolean;
}

/** Whether an operand group is a condition rather than a plain ranked word. */
function isCondition(group: QueryOperand[]): boolean {
  return group.length > 1 || group[0]!.phrase || group[0]!.negated;
}

/** `to_tsquery` text; null when nothing positive is left to search for. */
export function toTsquery(parsed: ParsedQuery, options: TsqueryOptions = {}): string | null {
  const render = (operand: QueryOperand): string => {
    const parts = operand.words.map((raw) => {
      const word = options.replace?.get(raw) ?? raw;
      if (operand.negated) return word;
      const prefix = options.prefix && !operand.phrase && word.length >= 3 ? '*' : '';
      const weight = options.titleOnly ? 'A' : '';
      return prefix || weight ? `${word}:${prefix}${weight}` : word;
    });
    const body = parts.length > 1 ? `(${parts.join(' <-> ')})` : parts[0]!;
    return operand.negated ? `!${body}` : body;
  };
  const chosen = options.conditionsOnly ? parsed.groups.filter(isCondition) : parsed.groups;
  const groups = chosen.map((group) =>
    group.length > 1 ? `(${group.map(render).join(' | ')})` : render(group[0]!),
  );
  if (!groups.length) return null;
  if (!options.conditionsOnly && !parsed.groups.some((g) => g.some((o) => !o.negated))) return null;
  return groups.join(' & ');
}

/** Meilisearch query text: phrases stay quoted, exclusions keep their `-`, `or` is dropped (its default already matches any). */
export function toMeiliQuery(parsed: ParsedQuery): string {
  return parsed.groups
    .flat()
    .map((o) => {
      const text = o.phrase || o.words.length > 1 ? `"${o.words.join(' ')}"` : o.words[0]!;
      return o.negated ? `-${text}` : text;
    })
    .join(' ');
}
