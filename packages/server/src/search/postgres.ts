import type { Db } from '../db/database.ts';
import { parseQuery, toTsquery } from './query-parser.ts';
import * as searchRepository from './search.repository.ts';
import type { IndexedDocument, SearchHit, SearchIndex, SearchRequest } from './search-index.ts';
import { chunkKey } from './search-index.ts';

/** Chunks ranked per arm of the candidate set (title matches, any matches). */
export const DEFAULT_CANDIDATE_CAP = 1000;

const VOCABULARY_WORD = /^\p{L}[\p{L}\p{N}]{2,39}$/u;

/** Distinct words of a document, for typo correction. */
export function vocabularyOf(document: IndexedDocument): string[] {
  const words = new Set<string>();
  for (const chunk of document.chunks) {
    for (const text of [chunk.title, chunk.content]) {
      for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
        if (VOCABULARY_WORD.test(word)) words.add(word);
      }
    }
  }
  return [...words];
}

/** Appends fallback hits after the ones already found, scored below them so the order stays by score. */
function appendFallback(hits: SearchHit[], more: SearchHit[], limit: number): SearchHit[] {
  const seen = new Set(hits.map((h) => chunkKey(h)));
  const floor = hits.length ? Math.min(...hits.map((h) => h.score)) : Number.POSITIVE_INFINITY;
  const added = more
    .filter((h) => !seen.has(chunkKey(h)))
    .map((h) => ({ ...h, score: Math.min(h.score * 0.5, floor * 0.99) }));
  return [...hits, ...added].slice(0, limit);
}

/**
 * The default index: Postgres full-text search over the `chunks` table itself (its tsvector column is
 * maintained by the database in the same transaction as the document), so indexing only records the
 * vocabulary used for typo correction.
 */
export function createPostgresSearchIndex(
  db: Db,
  options: { candidateCap?: number; fewResults?: number; titleArm?: boolean } = {},
): SearchIndex {
  const cap = options.candidateCap ?? DEFAULT_CANDIDATE_CAP;
  const few = options.fewResults ?? 3;
  const titleArm = options.titleArm ?? false;
  // Words this process knows are stored: most of a new document's words are, so most inserts are skipped.
  const known = new Set<string>();
  const remember = (words: string[]) => {
    if (known.size + words.length > 200_000) known.clear();
    for (const word of words) known.add(word);
  };
  // Sorted, so that concurrent transactions take the vocabulary's row locks in one order.
  const unknownWords = (documents: IndexedDocument[]) =>
    [...new Set(documents.flatMap(vocabularyOf))].filter((w) => !known.has(w)).sort();
  return {
    kind: 'postgres',
    async indexDocuments(documents) {
      const words = unknownWords(documents);
      if (!words.length) return;
      await searchRepository.insertVocabulary(db, words);
      remember(words);
    },
    async indexNewInTransaction(trx, documents) {
      const words = unknownWords(documents);
      if (words.length) await searchRepository.insertVocabulary(trx, words);
      return () => remember(words);
    },
    async deleteDocuments() {
      // Chunks are deleted with their document rows; the vocabulary keeps the words (harmless).
    },
    async clear() {
      known.clear();
      await searchRepository.clearVocabulary(db);
    },
    async search({ query, filters, access, limit, fallbacks }: SearchRequest) {
      const parsed = parseQuery(query);
      const tsquery = toTsquery(parsed);
      if (!tsquery) return searchRepository.recentChunks(db, { filters, access, limit });
      const run = (text: string, titleText: string | null) =>
        searchRepository.fullTextSearch(db, {
          tsquery: text,
          titleTsquery: titleText,
          filters,
          access,
          limit,
          cap,
        });

      // A title-only arm (`word:A`) costs as much as the main one (GIN cannot filter by weight), doubling the
      // time of every query, so it is used only when asked for.
      let hits = await run(tsquery, titleArm ? toTsquery(parsed, { titleOnly: true }) : null);
      const threshold = fallbacks === false ? 0 : Math.min(limit, few);
      if (hits.length < threshold) {
        const prefixed = toTsquery(parsed, { prefix: true });
        if (prefixed && prefixed !== tsquery) hits = appendFallback(hits, await run(prefixed, null), limit);
      }
      if (hits.length < threshold) {
        const corrections = await searchRepository.correctWords(db, parsed.positiveWords);
        if (corrections.size) {
          const corrected = toTsquery(parsed, { prefix: true, replace: corrections });
          if (corrected) hits = appendFallback(hits, await run(corrected, null), limit);
        }
      }
      return hits;
    },
  };
}
