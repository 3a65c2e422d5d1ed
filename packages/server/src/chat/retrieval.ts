import type { Actor } from '../auth/roles.ts';
import type { Db } from '../db/database.ts';
import { contentWords } from '../llm/builtin.ts';
import * as searchService from '../search/search.service.ts';
import type { SearchIndex } from '../search/search-index.ts';
import { chunkKey } from '../search/search-index.ts';
import type { SearchDoc } from './chat.schemas.ts';

export type RetrievedChunk = searchService.SearchChunk;
export type RetrievalFilters = searchService.ChunkSearchFilters;

export const MAX_CHUNKS = 25;

/** Chunks for a query, through the document index, with the caller's access (403 for a hidden document set). */
export async function retrieve(args: {
  ctx: { db: Db; search: SearchIndex };
  actor: Actor;
  query: string;
  filters: RetrievalFilters;
  limit: number;
}): Promise<RetrievedChunk[]> {
  // A question written as a sentence rarely has every word in one chunk: when the exact query finds little,
  // also match any of its content words. That relaxed query brings its own prefix and typo fallbacks, so
  // the exact one skips them (they would cost two more queries for nothing).
  const words = [...new Set(contentWords(args.query))];
  const relaxable = words.length >= 2;
  const strict = await searchService.searchChunks({ ...args, fallbacks: !relaxable });
  if (strict.length >= RELAXED_BELOW || !relaxable) return strict;
  const relaxed = await searchService.searchChunks({ ...args, query: words.join(' or ') });
  const seen = new Set(strict.map((c) => chunkKey(c)));
  return [...strict, ...relaxed.filter((c) => !seen.has(chunkKey(c)))].slice(0, args.limit);
}

const RELAXED_BELOW = 5;

/** Throws 403 naming the set when the caller may not search one of these document sets. */
export async function assertDocumentSetsAccessible({
  ctx,
  actor,
  names,
}: {
  ctx: { db: Db; search: SearchIndex };
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
