import type { LlmEvent, LlmProvider, LlmRequest, LlmSource } from './llm.types.ts';

const STOPWORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves tell explain describe please give
show find list know does did run search using use about`.split(/\s+/),
);

export const NOTHING_RELEVANT =
  'I could not find anything relevant to your question in the indexed documents, so I cannot answer it from them.';

/** Lower-cased words of a text without stopwords. */
export function contentWords(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((w) => !STOPWORDS.has(w) && (w.length > 1 || /\d/.test(w)));
}

/** Content words with a light suffix stripping, so "indexes" matches "index". */
export function keywords(text: string): string[] {
  return contentWords(text).map(stem);
}

function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && /(xes|ches|shes|sses)$/.test(word)) return word.slice(0, -2);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Sentences of a text, keeping their order; line breaks end a sentence too (lists, headings). */
export function sentences(text: string): string[] {
  return text
    .split(/\n+/)
    .flatMap((line) => line.split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'(])/u))
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
}

interface Candidate {
  source: LlmSource;
  order: number;
  text: string;
  score: number;
}

const MAX_SENTENCES = 5;

/**
 * The extractive answer: the sentences that share the most (rare) words with the question, at least half
 * as good as the best one, at most five, in source order, each with its citation. Deterministic.
 */
export function extractAnswer(question: string, sources: LlmSource[]): string {
  const terms = [...new Set(keywords(question))];
  if (terms.length === 0 || sources.length === 0) return NOTHING_RELEVANT;
  const candidates: Candidate[] = [];
  let order = 0;
  for (const source of sources) {
    for (const text of sentences(source.content)) {
      candidates.push({ source, order: order++, text, score: 0 });
    }
  }
  const termSets = candidates.map((c) => new Set(keywords(c.text)));
  const idf = new Map<string, number>();
  for (const term of terms) {
    const df = termSets.filter((set) => set.has(term)).length;
    idf.set(term, df === 0 ? 0 : Math.log(1 + candidates.length / df));
  }
  const titleTerms = sources.map((s) => new Set(keywords(s.title)));
  candidates.forEach((candidate, i) => {
    const set = termSets[i]!;
    let score = 0;
    for (const term of terms) if (set.has(term)) score += idf.get(term)!;
    // Long sentences match more words by chance; a mild length penalty favours focused ones.
    if (score > 0) {
      const titleBonus = terms.some((t) => titleTerms[sources.indexOf(candidate.source)]!.has(t)) ? 0.1 : 0;
      candidate.score = score / Math.log2(2 + set.size / 8) + titleBonus;
    }
  });
  const best = Math.max(0, ...candidates.map((c) => c.score));
  if (best <= 0) return NOTHING_RELEVANT;
  const ranked = candidates
    .map((c, i) => ({ c, terms: termSets[i]! }))
    .filter((x) => x.c.score > 0)
    .sort((a, b) => b.c.score - a.c.score || a.c.order - b.c.order);
  const picked = ranked.filter((x) => x.c.score >= best * 0.5).slice(0, MAX_SENTENCES);
  // A question with several parts: also take the best sentence for each word no chosen sentence covers yet.
  for (const term of terms) {
    if (picked.length >= MAX_SENTENCES) break;
    if (picked.some((x) => x.terms.has(term))) continue;
    const cover = ranked.find((x) => x.terms.has(term) && x.c.score >= best * 0.25);
    if (cover && !picked.includes(cover)) picked.push(cover);
  }
  const chosen = picked.map((x) => x.c).sort((a, b) => a.order - b.order);
  return chosen
    .map((c) => {
      const text = /[.!?]$/.test(c.text) ? c.text : `${c.text}.`;
      return c.source.citation_number === null ? text : `${text} [${c.source.citation_number}]`;
    })
    .join(' ');
}

/** Sub-questions for deep research: the question itself, then its parts (split on "?", ";" and "and"). */
export function planSubQuestions(question: string): string[] {
  const parts = question
    .split(/\?|;|\n|\band\b|\balso\b/i)
    .map((p) => p.replace(/^[\s,.:]+|[\s,.:]+$/g, ''))
    .filter((p) => keywords(p).length >= 1);
  const plan = [question.trim()];
  for (const part of parts) {
    if (plan.length >= 4) break;
    if (!plan.some((p) => p.toLowerCase() === part.toLowerCase())) plan.push(part);
  }
  return plan.length > 2 ? plan.slice(1) : plan.slice(0, 1);
}

/** Tool results in a request are this turn's (history carries none): search once per turn. */
function searchedThisTurn(request: LlmRequest): boolean {
  return request.messages.some((m) => m.role === 'tool');
}

async function* words(text: string): AsyncIterable<LlmEvent> {
  for (const piece of text.match(/\S+\s*/g) ?? []) yield { type: 'text', text: piece };
}

/**
 * The offline answerer used when no model is configured: it searches with the question, then answers with
 * the sentences of the retrieved chunks that best answer it.
 */
export function createBuiltinProvider(): LlmProvider {
  return {
    name: 'builtin',
    defaultModel: 'builtin-extractive',
    contextWindow: 32_000,
    async *stream(request) {
      const question = request.question ?? '';
      if (request.purpose === 'name') {
        yield* words(keywords(question).length ? question.split(/\s+/).slice(0, 6).join(' ') : 'New chat');
        return;
      }
      if (request.purpose === 'plan') {
        yield* words(planSubQuestions(question).join('\n'));
        return;
      }
      const search = request.tools?.find((t) => t.name === 'internal_search');
      if (search && request.tool_choice !== 'none' && !searchedThisTurn(request)) {
        yield {
          type: 'tool_call',
          call: {
            id: 'builtin-search-1',
            name: search.name,
            arguments: JSON.stringify({ queries: [question] }),
          },
        };
        return;
      }
      yield* words(extractAnswer(question, request.sources ?? []));
    },
  };
}
