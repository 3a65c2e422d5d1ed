import { createHash } from 'node:crypto';
import { type EnqueuedTaskPromise, Meilisearch } from 'meilisearch';
import { AppError } from '../errors.ts';
import { parseQuery, toMeiliQuery } from './query-parser.ts';
import type {
  AccessScope,
  IndexedDocument,
  IndexFilters,
  SearchIndex,
  SearchRequest,
} from './search-index.ts';
import { ENGLISH_STOP_WORDS } from './stop-words.ts';

/** One Meilisearch document per chunk; document attributes are denormalised for filtering. */
interface MeiliChunk {
  id: string;
  document_id: string;
  chunk_id: number;
  title: string;
  content: string;
  source_type: string;
  /** Unix seconds, so that it can be compared in filters. */
  updated_at: number;
  tags: string[];
  document_sets: string[];
  hidden: boolean;
  is_public: boolean;
  access_user_ids: string[];
  access_group_ids: number[];
  access_external: string[];
}

export const MEILI_SETTINGS = {
  searchableAttributes: ['title', 'content'],
  filterableAttributes: [
    'document_id',
    'chunk_id',
    'source_type',
    'updated_at',
    'tags',
    'document_sets',
    'hidden',
    'is_public',
    'access_user_ids',
    'access_group_ids',
    'access_external',
  ],
  sortableAttributes: ['updated_at'],
  // The words Postgres's English configuration ignores, so that they never decide ranking here either.
  stopWords: [...ENGLISH_STOP_WORDS],
};

/** Meilisearch ids allow only [A-Za-z0-9_-]: hash the document id. */
function chunkKey(documentId: string, chunkId: number): string {
  return `c_${createHash('sha256').update(documentId).digest('hex').slice(0, 40)}_${chunkId}`;
}

export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

const list = (values: string[]) => `[${values.map(quote).join(', ')}]`;

/** Access and filters as a Meilisearch filter expression. */
export function meiliFilter(filters: IndexFilters, access: AccessScope): string | undefined {
  const parts: string[] = [];
  if (!access.all) {
    const anyOf = ['is_public = true', `access_user_ids = ${quote(access.user_id)}`];
    if (access.group_ids.length) anyOf.push(`access_group_ids IN [${access.group_ids.join(', ')}]`);
    if (access.external.length) anyOf.push(`access_external IN ${list(access.external)}`);
    parts.push(`(${anyOf.join(' OR ')})`);
  }
  if (!filters.include_hidden) parts.push('hidden = false');
  if (filters.source_types) parts.push(`source_type IN ${list(filters.source_types)}`);
  if (filters.document_sets) parts.push(`document_sets IN ${list(filters.document_sets)}`);
  if (filters.time_cutoff) parts.push(`updated_at >= ${Math.floor(filters.time_cutoff.getTime() / 1000)}`);
  if (filters.tags) parts.push(`tags IN ${list(filters.tags)}`);
  if (filters.document_ids) parts.push(`document_id IN ${list(filters.document_ids)}`);
  return parts.length ? parts.join(' AND ') : undefined;
}

function toMeiliChunks(document: IndexedDocument): MeiliChunk[] {
  return document.chunks.map((chunk) => ({
    id: chunkKey(document.document_id, chunk.chunk_id),
    document_id: document.document_id,
    chunk_id: chunk.chunk_id,
    title: chunk.title,
    content: chunk.content,
    source_type: document.source_type,
    updated_at: Math.floor(document.updated_at.getTime() / 1000),
    tags: document.tags,
    document_sets: document.document_sets,
    hidden: document.hidden,
    is_public: document.is_public,
    access_user_ids: document.access_user_ids,
    access_group_ids: document.access_group_ids,
    access_external: document.access_external ?? [],
  }));
}

const BATCH = 100;

/**
 * The index in Meilisearch (`MEILI_URL`): filterable attributes for access, source, sets, time and
 * tags. Every write waits for its task and fails if the task failed, so a write the caller saw
 * succeed is searchable.
 */
export function createMeilisearchIndex(options: {
  host: string;
  apiKey?: string | undefined;
  indexUid?: string;
  taskTimeoutMs?: number;
}): SearchIndex {
  const client = new Meilisearch({ host: options.host, apiKey: options.apiKey });
  const index = client.index<MeiliChunk>(options.indexUid ?? 'kas_chunks');
  const timeout = options.taskTimeoutMs ?? 30_000;

  async function run(task: EnqueuedTaskPromise): Promise<void> {
    const done = await task.waitTask({ timeout, interval: 20 });
    if (done.status !== 'succeeded') {
      throw new Error(`Meilisearch task ${done.uid} ${done.status}: ${done.error?.message ?? 'no detail'}`);
    }
  }

  let settings: Promise<void> | undefined;
  const ensureSettings = () => {
    settings ??= run(index.updateSettings(MEILI_SETTINGS)).catch((error: unknown) => {
      settings = undefined;
      throw error;
    });
    return settings;
  };

  return {
    kind: 'meilisearch',
    async indexDocuments(documents) {
      await ensureSettings();
      const chunks = documents.flatMap(toMeiliChunks);
      for (let i = 0; i < chunks.length; i += 1000) {
        await run(index.addDocuments(chunks.slice(i, i + 1000), { primaryKey: 'id' }));
      }
      // Chunks beyond the new chunk count are left from a longer previous version.
      for (let i = 0; i < documents.length; i += BATCH) {
        const stale = documents
          .slice(i, i + BATCH)
          .map((d) => `(document_id = ${quote(d.document_id)} AND chunk_id >= ${d.chunks.length})`);
        await run(index.deleteDocuments({ filter: stale.join(' OR ') }));
      }
    },
    async deleteDocuments(documentIds) {
      await ensureSettings();
      for (let i = 0; i < documentIds.length; i += BATCH) {
        await run(
          index.deleteDocuments({ filter: `document_id IN ${list(documentIds.slice(i, i + BATCH))}` }),
        );
      }
    },
    async clear() {
      await ensureSettings();
      await run(index.deleteAllDocuments());
    },
    async search({ query, filters, access, limit }: SearchRequest) {
      const parsed = parseQuery(query);
      const q = toMeiliQuery(parsed);
      try {
        await ensureSettings();
        const result = await index.search(q, {
          filter: meiliFilter(filters, access),
          limit,
          showRankingScore: true,
          attributesToRetrieve: ['document_id', 'chunk_id'],
          // A weak AND: documents with every word first, then the most frequent words are dropped one by one.
          matchingStrategy: 'frequency',
          ...(q ? {} : { sort: ['updated_at:desc'] }),
        });
        return result.hits.map((hit) => ({
          document_id: hit.document_id,
          chunk_id: hit.chunk_id,
          score: q ? (hit._rankingScore ?? 0) : 0,
        }));
      } catch (error) {
        throw new AppError('SERVICE_UNAVAILABLE', 'The search engine is unavailable', { cause: error });
      }
    },
  };
}
