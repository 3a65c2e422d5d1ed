import type { Actor } from '../auth/roles.ts';
import type { Db } from '../db/database.ts';
import { isStopWord, stem } from '../llm/builtin.ts';
import * as searchService from '../search/search.service.ts';
import type { SearchIndex } from '../search/search-index.ts';
import type { SearchDoc } from './chat.schemas.ts';

export type RetrievedChunk = searchService.SearchChunk;
export type RetrievalFilters = searchService.ChunkSearchFilters;

export const MAX_CHUNKS = 25;

/** Chunks for a query, through the document index, with the caller's access (403 for a hidden document set). */
export async function retrieve(args: {
  ctx: { dbRead: Db; search: SearchIndex };
  actor: Actor;
  query: string;
  filters: RetrievalFilters;
  limit: number;
}): Promise<RetrievedChunk[]> {
  // Plain words are a weak AND (search/query-parser.ts): a question written as a sentence finds the
  // chunks that share most of its words, and one word no document has never empties the result.
  return searchService.searchChunks(args);
}

/** Chunks beyond a document's best one add this share of their score to it. */
const OTHER_CHUNKS_WEIGHT = 0.2;
/** A document with every adjacent pair of the query's words close together scores this much more. */
const PROXIMITY_WEIGHT = 0.3;
/** Two query words are "close together" at most this many words apart (stop words count). */
const PROXIMITY_WINDOW = 3;

export interface RankedDocument {
  document_id: string;
  /** Its retrieved chunks, best first. */
  chunks: RetrievedChunk[];
  score: number;
}

/** Words as identifiers keep them: `shared_buffers`, `pg_hba` are one word each. */
const WORD = /[\p{L}\p{N}_]+/gu;
const wordsOf = (text: string) => text.toLowerCase().match(WORD) ?? [];
const contentTermsOf = (text: string) =>
  wordsOf(text)
    .filter((w) => !isStopWord(w))
    .map(stem);

/**
 * Where the `wanted` stems occur among a text's lower-cased, stemmed words (stop words count as words).
 * Only those are kept: a map of every word of 25 chunks was most of ranking a chat turn's documents.
 */
function positions(text: string, wanted: Set<string>): Map<string, number[]> {
  const at = new Map<string, number[]>();
  wordsOf(text).forEach((word, i) => {
    const key = stem(word);
    if (!wanted.has(key)) return;
    const list = at.get(key);
    if (list) list.push(i);
    else at.set(key, [i]);
  });
  return at;
}

/** Adjacent pairs of a query's content words (stop words between them skipped), stemmed. */
function wordPairs(query: string): [string, string][] {
  const words = contentTermsOf(query);
  return words.slice(1).map((word, i) => [words[i]!, word]);
}

/**
 * The documents of a search, most relevant first: the order in which chat numbers them, so that
 * citation [1] is the best document. Retrieval ranks chunks; a document is worth its best chunk's
 * score plus a share of its other retrieved chunks' (a page that matches in several places is more
 * about the question), times the share of the query's words its retrieved text contains (Lucene's
 * classic coordination factor), times a bonus for the query's adjacent word pairs found close
 * together in it (term proximity). Ties keep retrieval's order.
 */
export function rankDocuments(queries: string[], chunks: RetrievedChunk[]): RankedDocument[] {
  const groups = new Map<string, RetrievedChunk[]>();
  for (const chunk of [...chunks].sort((a, b) => b.score - a.score)) {
    const group = groups.get(chunk.document_id);
    if (group) group.push(chunk);
    else groups.set(chunk.document_id, [chunk]);
  }
  const terms = [...new Set(queries.flatMap(contentTermsOf))];
  const pairs = queries.flatMap(wordPairs);
  const wanted = new Set([...terms, ...pairs.flat()]);
  const ranked = [...groups.entries()].map(([document_id, group], order) => {
    const [best, ...others] = group;
    let score = best!.score + OTHER_CHUNKS_WEIGHT * others.reduce((sum, c) => sum + c.score, 0);
    const at = positions(group.map((c) => `${c.title} . ${c.content}`).join(' . '), wanted);
    if (terms.length) score *= terms.filter((t) => at.has(t)).length / terms.length;
    if (pairs.length) {
      const close = pairs.filter(([first, second]) => {
        const after = new Set(at.get(second) ?? []);
        return (at.get(first) ?? []).some((p) => {
          for (let d = 1; d <= PROXIMITY_WINDOW; d++) if (after.has(p + d)) return true;
          return false;
        });
      }).length;
      score *= 1 + (PROXIMITY_WEIGHT * close) / pairs.length;
    }
    return { document_id, chunks: group, score, order };
  });
  return ranked
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map(({ document_id, chunks, score }) => ({ document_id, chunks, score }));
}

/** Throws 403 naming the set when the caller may not search one of these document sets. */
export async function assertDocumentSetsAccessible({
  ctx,
  actor,
  names,
}: {
  ctx: { dbRead: Db; search: SearchIndex };
  actor: Actor;
  names: string[];
}): Promise<void> {
  // A search limited to nothing but these sets resolves (and checks) them without touching the index.
  await searchService.searchChunks({ ctx, actor, query: '', filters: { document_set: names }, limit: 0 });
}

export function toSearchDoc(chunk: RetrievedChunk): SearchDoc {
  return {
    ...searchService.toSearchDoc(chunk),
    primary_owners: null,
    secondary_owners: null,
    is_internet: false,
  };
}
