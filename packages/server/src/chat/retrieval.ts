import type { Actor } from '../auth/roles.ts';
import type { Db } from '../db/database.ts';
import * as searchService from '../search/search.service.ts';
import type { SearchIndex } from '../search/search-index.ts';
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
  // Plain words are a weak AND (search/query-parser.ts): a question written as a sentence finds the
  // chunks that share most of its words, and one word no document has never empties the result.
  return searchService.searchChunks(args);
}

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
