import type { Actor } from '../auth/roles.ts';
import { memberGroupIds } from '../auth/scope.ts';
import type { ServiceContext } from '../context.ts';
import { type Db, inOneTurn } from '../db/database.ts';
import * as documentSetsRepository from '../document-sets/document-sets.repository.ts';
import { AppError } from '../errors.ts';
import * as identityRepository from '../identity/identity.repository.ts';
import { highlighter, wordsToMark } from './highlight.ts';
import { parseQuery } from './query-parser.ts';
import * as searchRepository from './search.repository.ts';
import type { AdminSearchInput, AdminSearchResponse, SearchDoc } from './search.schemas.ts';
import { type AccessScope, chunkKey, encodeTag, type IndexFilters } from './search-index.ts';

/** Searches read `dbRead` (a replica when configured, never behind the last access change). */
type Deps = ServiceContext<'dbRead' | 'search'>;

/** Filters a caller (admin search, chat retrieval, an agent's scope) may put on a search. */
export interface ChunkSearchFilters {
  source_type?: string[] | null | undefined;
  /** Document set names. Every named set must exist and be visible to the actor (else 400, naming it). */
  document_set?: string[] | null | undefined;
  /** Document set ids (an agent's `document_set_ids`); combined with `document_set` as "in any of them". */
  document_set_ids?: number[] | null | undefined;
  /** Only documents updated at or after this time. */
  time_cutoff?: Date | string | null | undefined;
  tags?: { tag_key: string; tag_value: string }[] | null | undefined;
  /** Only these documents (an agent's attached documents). */
  document_ids?: string[] | null | undefined;
  /** Include documents hidden by an admin (admin search does). */
  include_hidden?: boolean | undefined;
}

/** One retrieved chunk, with what a citation needs. */
export interface SearchChunk {
  document_id: string;
  chunk_id: number;
  semantic_identifier: string;
  title: string;
  /** The link of this chunk's section (falls back to the document's first link). */
  link: string | null;
  source_type: string;
  content: string;
  blurb: string;
  score: number;
  /** ISO 8601 */
  updated_at: string;
  metadata: Record<string, string | string[]>;
  /** Excerpts of `content` with the query's words wrapped in `<hi></hi>`. */
  match_highlights: string[];
  hidden: boolean;
  boost: number;
}

/**
 * What the actor may see: everything for admins, else public documents, their own, their groups', and
 * those a `sync` source lists for one of their external principals.
 */
export async function accessScopeOf(ctx: { dbRead: Db }, actor: Actor): Promise<AccessScope> {
  if (actor.role === 'admin') return { all: true };
  const [group_ids, external] = await Promise.all([
    memberGroupIds(ctx.dbRead, actor),
    identityRepository.externalPrincipalsOfUser(ctx.dbRead, actor.user_id),
  ]);
  return { all: false, user_id: actor.user_id, group_ids, external };
}

async function resolveFilters(ctx: Deps, actor: Actor, filters: ChunkSearchFilters): Promise<IndexFilters> {
  const viewer =
    actor.role === 'admin' ? ({ all: true } as const) : { all: false as const, user_id: actor.user_id };
  let documentSets: string[] | undefined;
  if (filters.document_set?.length || filters.document_set_ids?.length) {
    const byName = await documentSetsRepository.findSetsByName(
      ctx.dbRead,
      filters.document_set ?? [],
      viewer,
    );
    const byId = await documentSetsRepository.findSetsById(
      ctx.dbRead,
      filters.document_set_ids ?? [],
      viewer,
    );
    // A set named in a filter that does not exist would silently match nothing: refused, naming it. One
    // the caller may not see is refused alike (answering otherwise would tell them that a private set of
    // that name exists). An id (an agent's sets) filters like an absent set: a deleted set is not the
    // caller's mistake.
    const visible = new Set(byName.filter((s) => s.visible).map((s) => s.name));
    const unknown = (filters.document_set ?? []).filter((name) => !visible.has(name));
    if (unknown.length)
      throw new AppError(
        'INVALID_INPUT',
        `No document set named ${unknown.map((name) => JSON.stringify(name)).join(', ')} among the sets you can search ` +
          '(GET /api/manage/document-set lists them; names are case-sensitive)',
      );
    documentSets = [...new Set([...byName, ...byId].filter((s) => s.visible).map((s) => s.name))];
  }
  const cutoff = filters.time_cutoff ? new Date(filters.time_cutoff) : undefined;
  return {
    source_types: filters.source_type?.length ? filters.source_type : undefined,
    document_sets: documentSets,
    time_cutoff: cutoff && !Number.isNaN(cutoff.getTime()) ? cutoff : undefined,
    tags: filters.tags?.length ? filters.tags.map(encodeTag) : undefined,
    document_ids: filters.document_ids?.length ? filters.document_ids : undefined,
    include_hidden: filters.include_hidden,
  };
}

/**
 * Retrieval with the actor's access: chunks matching the query and filters, best first. Chat calls
 * this for its search tool; admin search builds on it.
 */
export async function searchChunks({
  ctx,
  actor,
  query,
  filters = {},
  limit = 25,
  fallbacks = true,
  perDocument,
}: {
  ctx: Deps;
  actor: Actor;
  query: string;
  filters?: ChunkSearchFilters;
  limit?: number;
  /** Prefix and typo fallbacks when the exact query finds little (see SearchRequest.fallbacks). */
  fallbacks?: boolean;
  /** Only each document's best chunk, for at most this many documents (loaded and highlighted alone). */
  perDocument?: number;
}): Promise<SearchChunk[]> {
  // On the embedded database, one wait for its connection rather than one per statement behind bulk work.
  return inOneTurn(() => retrieve({ ctx, actor, query, filters, limit, fallbacks, perDocument }));
}

async function retrieve({
  ctx,
  actor,
  query,
  filters,
  limit,
  fallbacks,
  perDocument,
}: {
  ctx: Deps;
  actor: Actor;
  query: string;
  filters: ChunkSearchFilters;
  limit: number;
  fallbacks: boolean;
  perDocument: number | undefined;
}): Promise<SearchChunk[]> {
  const access = await accessScopeOf(ctx, actor);
  const indexFilters = await resolveFilters(ctx, actor, filters);
  if (indexFilters.document_sets?.length === 0) return [];
  let hits = await ctx.search.search({
    query,
    filters: indexFilters,
    access,
    limit,
    fallbacks,
    rows: { perDocument },
  });
  if (perDocument !== undefined) {
    const seen = new Set<string>();
    hits = hits
      .filter((h) => {
        if (seen.has(h.document_id)) return false;
        seen.add(h.document_id);
        return true;
      })
      .slice(0, perDocument);
  }
  // Rows the index did not return with the ranking are loaded here.
  const missing = hits.filter((h) => !h.row);
  const loaded = missing.length ? await searchRepository.loadChunks(ctx.dbRead, missing, access) : [];
  const byKey = new Map(loaded.map((r) => [chunkKey(r), r]));
  for (const hit of hits) if (hit.row) byKey.set(chunkKey(hit), hit.row);
  const mark = highlighter(wordsToMark(parseQuery(query).positiveWords));
  const chunks: SearchChunk[] = [];
  for (const hit of hits) {
    const row = byKey.get(chunkKey(hit));
    if (!row) continue;
    chunks.push({
      document_id: row.document_id,
      chunk_id: row.chunk_id,
      semantic_identifier: row.semantic_identifier,
      title: row.title,
      link: row.link ?? row.document_link,
      source_type: row.source_type,
      content: row.content,
      blurb: row.blurb,
      score: hit.score,
      updated_at: new Date(row.updated_at).toISOString(),
      metadata: row.metadata,
      match_highlights: mark(row.content),
      hidden: row.hidden,
      boost: row.boost,
    });
  }
  return chunks;
}

/** The one mapping from a retrieved chunk to the API's `SearchDoc` (admin search and chat). */
export function toSearchDoc(chunk: SearchChunk): SearchDoc {
  return {
    document_id: chunk.document_id,
    chunk_ind: chunk.chunk_id,
    semantic_identifier: chunk.semantic_identifier,
    link: chunk.link,
    blurb: chunk.blurb,
    source_type: chunk.source_type,
    score: chunk.score,
    match_highlights: chunk.match_highlights,
    updated_at: chunk.updated_at,
    metadata: chunk.metadata,
    boost: chunk.boost,
    hidden: chunk.hidden,
  };
}

/** Chunks retrieved per admin search; results are then one per document. */
export const ADMIN_SEARCH_CHUNKS = 100;
export const ADMIN_SEARCH_DOCUMENTS = 50;

/** Admin search: one result per document (its best chunk), ordered by relevance; hidden documents included. */
export async function adminSearch({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: AdminSearchInput;
}): Promise<AdminSearchResponse> {
  const { actor } = ctx;
  const chunks = await searchChunks({
    ctx,
    actor,
    query: input.query,
    filters: { ...input.filters, include_hidden: true },
    limit: ADMIN_SEARCH_CHUNKS,
    // Only the chunks shown are loaded and highlighted.
    perDocument: ADMIN_SEARCH_DOCUMENTS,
  });
  return { documents: chunks.map(toSearchDoc) };
}
