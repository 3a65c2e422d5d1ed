import type { LlmEvent, LlmProvider, LlmRequest, LlmSource } from './llm.types.ts';
import { passages, withSignature } from './passages.ts';

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

export function isStopWord(word: string): boolean {
  return STOPWORDS.has(word) || (word.length < 2 && !/\d/.test(word));
}

/** Lower-cased words of a text without stopwords. */
export function contentWords(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((w) => !isStopWord(w));
}

/** Content words with a light suffix stripping, so "indexes" matches "index". */
export function keywords(text: string): string[] {
  return contentWords(text).map(stem);
}

/** A light suffix stripping ("indexes" → "index"). */
export function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && /(xes|ches|shes|sses)$/.test(word)) return word.slice(0, -2);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Sentences of a text, keeping their order, read through Markdown and reStructuredText markup. */
export function sentences(text: string): string[] {
  let shown: string | null = null;
  return passages(text)
    .filter((p) => !p.isHeading)
    .map((p) => {
      const text = withSignature(p.text, p.signature === shown ? null : p.signature);
      shown = p.signature;
      return text;
    });
}

interface Candidate {
  source: LlmSource;
  /** The source's position among the sources (their retrieval rank). */
  rank: number;
  order: number;
  text: string;
  /** The signature the sentence describes (its words count as the sentence's, half as much). */
  signature: string | null;
  /** Words only the signature has. */
  signatureTerms: Set<string>;
  module: string | null;
  terms: Set<string>;
  /** Words of the section's heading the sentence does not have itself: they count half. */
  headingTerms: Set<string>;
  /** The sentence answers a question (its section is headed by one): the question's words count fully. */
  answersQuestion: boolean;
  score: number;
}

const MAX_SENTENCES = 4;
/** Short lines are sentences only when they end like one and are not numbered like a section. */
const MIN_SENTENCE_WORDS = 5;

/** Headings, table-of-contents lines and index entries: no answers. */
function isHeading(text: string): boolean {
  if ((text.match(/[\p{L}\p{N}]+/gu) ?? []).length >= MIN_SENTENCE_WORDS) return false;
  return !/[.!?:`]$/.test(text) || /^\d+(\.\d+)*\.?\s/.test(text);
}

/** The question asked back ("Is there a free tier?" in a page that does not answer it): no answer. */
function echoesQuestion(text: string, question: Set<string>): boolean {
  if (!/\?["')\]]*$/.test(text)) return false;
  const own = keywords(text);
  return own.length > 0 && own.filter((w) => question.has(w)).length / own.length >= 0.6;
}

/** A "sentence" longer than this (a text without punctuation) is cut: an answer quotes, it does not copy. */
const MAX_SENTENCE_CHARS = 1000;

function clip(sentence: string): string {
  if (sentence.length <= MAX_SENTENCE_CHARS) return sentence;
  const cut = sentence.slice(0, MAX_SENTENCE_CHARS);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), MAX_SENTENCE_CHARS / 2)).trimEnd()} …`;
}

const normalised = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/** How much retrieval's order counts against a source's own sentences (relevance ÷ (1 + decay·rank)). */
const RANK_DECAY = 0.25;
/** At most this many documents are cited. */
const MAX_DOCUMENTS = 3;
/** A document is cited when its relevance reaches this share of the best document's. */
const DOCUMENT_FLOOR = 0.6;
/** The same for a document ranked above the most relevant one by retrieval. */
const LEADING_DOCUMENT_FLOOR = 0.85;
/** A further sentence of a cited document is taken when its score reaches this share of the best one's. */
const SENTENCE_FLOOR = 0.5;
/** Weight of the words a sentence gets from its section's heading. */
const HEADING_WEIGHT = 0.5;
/** Weight of the words a sentence gets from the signature it describes (shared by its whole description). */
const SIGNATURE_WEIGHT = 0.5;
/** A sentence with a signature or code scores this much more. */
const IDENTIFIER_BONUS = 1.2;

/**
 * The extractive answer. Each sentence of the retrieved sources scores by the (rare) question words it
 * contains (half for those only its section's heading has, so a FAQ's answer scores with its question);
 * each source by its best sentence, the question words in its title and its retrieval rank. Headings and
 * the question asked back are no answers; a sentence found in several sources counts once. The answer
 * takes the best sentence of the most relevant sources (those within a floor of the best), then their
 * other good sentences and a sentence for each question word still uncovered, from those sources only, in
 * the sources' order: chat numbers them most relevant first (chat/retrieval.ts rankDocuments), so
 * citation [1] leads the answer whenever it is cited. Sentences share at least one word with the question
 * that is no stop word, so a source that shares only stop words is never cited. Deterministic.
 */
export function extractAnswer(question: string, sources: LlmSource[]): string {
  const terms = [...new Set(keywords(question))];
  if (terms.length === 0 || sources.length === 0) return NOTHING_RELEVANT;
  const questionTerms = new Set(terms);
  const candidates: Candidate[] = [];
  const seen = new Set<string>();
  let order = 0;
  sources.forEach((source, rank) => {
    for (const passage of passages(source.content, source.title)) {
      if (passage.isHeading || isHeading(passage.text) || echoesQuestion(passage.text, questionTerms))
        continue;
      const text = clip(passage.text);
      const { signature, module } = passage;
      const key = normalised(`${signature ?? ''} ${text}`);
      if (seen.has(key)) continue;
      seen.add(key);
      const ownText = new Set(keywords(text));
      const signatureTerms = new Set(keywords(signature ?? '').filter((t) => !ownText.has(t)));
      const own = new Set([...ownText, ...signatureTerms]);
      const headingTerms = new Set(keywords(passage.heading ?? '').filter((t) => !own.has(t)));
      const answersQuestion = passage.heading?.endsWith('?') ?? false;
      candidates.push({
        source,
        rank,
        order: order++,
        text,
        signature,
        signatureTerms,
        module,
        terms: own,
        headingTerms,
        answersQuestion,
        score: 0,
      });
    }
  });
  const idf = new Map<string, number>();
  for (const term of terms) {
    const df = candidates.filter(
      (c) => c.terms.has(term) || (c.answersQuestion && c.headingTerms.has(term)),
    ).length;
    idf.set(term, df === 0 ? 0 : Math.log(1 + candidates.length / df));
  }
  const totalIdf = terms.reduce((sum, t) => sum + idf.get(t)!, 0);
  for (const candidate of candidates) {
    let score = 0;
    for (const term of terms)
      if (candidate.terms.has(term))
        score += (candidate.signatureTerms.has(term) ? SIGNATURE_WEIGHT : 1) * idf.get(term)!;
    // The answer to a FAQ's question is about what it asks, in whatever words.
    if (score <= 0 && !candidate.answersQuestion) continue;
    const headingWeight = candidate.answersQuestion ? 1 : HEADING_WEIGHT;
    for (const term of terms) if (candidate.headingTerms.has(term)) score += headingWeight * idf.get(term)!;
    if (score <= 0) continue;
    // Long sentences match more words by chance; a mild length penalty favours focused ones.
    candidate.score = score / Math.log2(2 + (candidate.terms.size - candidate.signatureTerms.size) / 8);
    // A sentence that names what to use (a signature, code) answers a "how do I" better than one that
    // only describes it.
    if (candidate.signature || candidate.text.includes('`')) candidate.score *= IDENTIFIER_BONUS;
  }
  if (!candidates.some((c) => c.score > 0)) return NOTHING_RELEVANT;

  // Each source: its best sentence, plus the share of the question's weight its title carries, with a
  // gentle preference for what retrieval ranked higher.
  const bySource = new Map<LlmSource, { best: Candidate; relevance: number }>();
  for (const candidate of candidates) {
    if (candidate.score <= 0) continue;
    const known = bySource.get(candidate.source);
    if (!known || candidate.score > known.best.score) {
      const titleTerms = new Set(keywords(candidate.source.title));
      const titleWeight = terms.reduce((sum, t) => sum + (titleTerms.has(t) ? idf.get(t)! : 0), 0);
      const relevance =
        (candidate.score * (1 + (totalIdf ? titleWeight / totalIdf : 0))) / (1 + RANK_DECAY * candidate.rank);
      bySource.set(candidate.source, { best: candidate, relevance });
    }
  }
  const documents = [...bySource.values()].sort(
    (a, b) => b.relevance - a.relevance || a.best.rank - b.best.rank,
  );
  const top = documents[0]!.relevance;
  // A document retrieval ranked above the most relevant one leads the answer when cited (citations are
  // numbered in retrieval's order): it is cited only when it is nearly as relevant.
  const floor = (d: (typeof documents)[number]) =>
    top * (d.best.rank < documents[0]!.best.rank ? LEADING_DOCUMENT_FLOOR : DOCUMENT_FLOOR);
  const chosen = documents.filter((d) => d.relevance >= floor(d)).slice(0, MAX_DOCUMENTS);
  const picked: Candidate[] = chosen.map((d) => d.best);
  const best = Math.max(...picked.map((c) => c.score));
  // Other good sentences of the cited sources.
  const citedSources = new Set(chosen.map((d) => d.best.source));
  const sorted = (list: Candidate[]) => [...list].sort((a, b) => b.score - a.score || a.order - b.order);
  const ofCited = sorted(candidates.filter((c) => citedSources.has(c.source)));
  for (const candidate of ofCited) {
    if (picked.length >= MAX_SENTENCES || candidate.score < best * SENTENCE_FLOOR) break;
    if (!picked.includes(candidate)) picked.push(candidate);
  }
  // A question with several parts ("… and …"): also take the best sentence for each word no chosen
  // sentence covers yet, from any source; otherwise only from the cited ones.
  const pool = planSubQuestions(question).length > 1 ? sorted(candidates) : ofCited;
  for (const term of terms) {
    if (picked.length >= MAX_SENTENCES) break;
    if (picked.some((c) => c.terms.has(term))) continue;
    const cover = pool.find((c) => c.terms.has(term) && c.score >= best * 0.25 && !picked.includes(c));
    if (cover) picked.push(cover);
  }
  // Best-ranked source first (sources come most relevant first, so citation [1] leads when it is
  // cited); a source's sentences in their own order.
  picked.sort((a, b) => a.rank - b.rank || a.order - b.order);
  const shown = new Set<string>();
  return picked
    .map((c) => {
      let text = /[.!?:`]$/.test(c.text) ? c.text : `${c.text}.`;
      // "This module …" on a module's page says which module.
      if (c.module && !c.signature) text = text.replace(/^This module\b/, `The \`${c.module}\` module`);
      if (c.signature && !shown.has(c.signature) && !text.includes(c.signature)) {
        shown.add(c.signature);
        text = withSignature(text, c.signature);
      }
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
    toolCalling: false,
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
