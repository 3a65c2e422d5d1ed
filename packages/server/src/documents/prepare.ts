import { createHash } from 'node:crypto';
import { correctionWordsOf, encodeTag } from '../search/search-index.ts';
import { type Chunk, chunkDocument } from './chunking.ts';
import type { IngestDocumentInput, IngestedDocument } from './documents.schemas.ts';
import type { Document, Owner } from './documents.table.ts';

/**
 * The part of ingesting a document that needs no database: its id, hashes and chunks. Pure and
 * CPU-heavy for a large document, so the CPU pool runs it (`cpu-pool/tasks.ts`); the ingestion
 * service (`service/ingest.ts`) writes the result.
 */

const DEFAULT_SOURCE = 'file';

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Same content, same id: the same document posted twice without an id is one document. */
export function deriveDocumentId(document: IngestedDocument): string {
  const content = JSON.stringify([
    document.semantic_identifier,
    document.sections.map((s) => [s.text, s.link ?? null]),
  ]);
  return `ingestion_api_${sha256(content).slice(0, 32)}`;
}

function normaliseMetadata(metadata: IngestedDocument['metadata']): Record<string, string | string[]> {
  return Object.fromEntries(Object.entries(metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function tagsOf(metadata: Record<string, string | string[]>): string[] {
  const tags = new Set<string>();
  for (const [key, value] of Object.entries(metadata)) {
    for (const v of Array.isArray(value) ? value : [value])
      tags.add(encodeTag({ tag_key: key, tag_value: v }));
  }
  return [...tags];
}

function ownersOf(owners: IngestedDocument['primary_owners']): Owner[] {
  return (owners ?? []).map((o) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)),
  ) as Owner[];
}

/** Who may see a document according to its `sync` source: principals (`principals.ts`) and whether it is public there. */
export interface ExternalAccessInput {
  is_public: boolean;
  principals: readonly string[];
}

/** A validated ingestion request with everything computed that needs no database. */
export interface PreparedDocument {
  ccPairId: number | null;
  semanticIdentifier: string;
  /** The row without its access, which comes from the CC pair. */
  row: Omit<
    Document,
    | 'hidden'
    | 'pending'
    | 'boost'
    | 'time_created'
    | 'time_updated'
    | 'is_public'
    | 'access_user_ids'
    | 'access_group_ids'
  >;
  chunks: Chunk[];
  /**
   * The words the search index records for typo correction, found here (on the event loop one document
   * per turn, or in the CPU pool) rather than in the writing transaction, which would wait for them.
   * Separated by spaces: one string, not hundreds, lives until the document is written (each young-
   * generation collection copied them all).
   */
  vocabulary: string;
}

/** `fromConnector`: synced by a connector, so not listed or deletable through the ingestion API. */
export function prepareDocument(
  input: IngestDocumentInput,
  options: {
    fromConnector?: boolean | undefined;
    externalAccess?: ExternalAccessInput | null | undefined;
    /** `KAS_MAX_DOCUMENT_CHUNKS`: a longer document is refused (413). */
    maxChunks?: number | undefined;
  } = {},
): PreparedDocument {
  const external = options.externalAccess
    ? {
        is_public: options.externalAccess.is_public,
        principals: [...new Set(options.externalAccess.principals)].sort(),
      }
    : null;
  const { document } = input;
  const id = document.id ?? deriveDocumentId(document);
  const title = document.title?.trim() || document.semantic_identifier;
  const metadata = normaliseMetadata(document.metadata);
  const primary_owners = ownersOf(document.primary_owners);
  const secondary_owners = ownersOf(document.secondary_owners);
  const source = document.source ?? DEFAULT_SOURCE;
  const content_hash = sha256(
    JSON.stringify([
      document.semantic_identifier,
      title,
      source,
      document.sections.map((s) => [s.text, s.link ?? null]),
      metadata,
      primary_owners,
      secondary_owners,
      // A permission change at the source rewrites the document (its access) like a content change.
      ...(external ? [external] : []),
    ]),
  );
  const chunks = chunkDocument({
    title,
    sections: document.sections,
    maxChunks: options.maxChunks,
    subject: `Document ${JSON.stringify(id.slice(0, 200))}`,
  });
  return {
    ccPairId: input.cc_pair_id ?? null,
    semanticIdentifier: document.semantic_identifier,
    chunks,
    vocabulary: correctionWordsOf(chunks).join(' '),
    row: {
      id,
      semantic_id: document.semantic_identifier,
      title,
      link: document.sections.find((s) => s.link)?.link ?? null,
      source,
      from_ingestion_api: !options.fromConnector,
      metadata,
      tags: tagsOf(metadata),
      primary_owners,
      secondary_owners,
      doc_updated_at: document.doc_updated_at ?? new Date(),
      content_hash,
      chunk_count: chunks.length,
      access_external: external?.principals ?? [],
      external_public: external?.is_public ?? false,
    },
  };
}
