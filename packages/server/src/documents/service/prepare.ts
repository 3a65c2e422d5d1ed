import type { IndexedDocument } from '../../search/search-index.ts';
import type * as documentsRepository from '../documents.repository.ts';
import type { PreparedDocument } from '../prepare.ts';

export {
  deriveDocumentId,
  type ExternalAccessInput,
  type PreparedDocument,
  prepareDocument,
  sha256,
} from '../prepare.ts';

/** Access of a document owned by this pair alone (a `sync` pair: only what the source lists). */
function accessOf(p: PreparedDocument, pair: documentsRepository.CcPairAccess) {
  if (pair.access_type === 'sync') {
    return {
      is_public: p.row.external_public,
      access_user_ids: [] as string[],
      access_group_ids: [] as number[],
      access_external: p.row.access_external,
    };
  }
  return {
    is_public: pair.access_type === 'public',
    access_user_ids: pair.user_ids,
    access_group_ids: pair.group_ids,
    access_external: [] as string[],
  };
}

/** A new document is owned by this pair alone; otherwise access is recomputed from all owners. */
export function rowFor(
  p: PreparedDocument,
  pair: documentsRepository.CcPairAccess,
): documentsRepository.DocumentRow {
  return { ...p.row, ...accessOf(p, pair) };
}

/** A new document as the index stores it: everything is already in memory. */
export function indexedNew(p: PreparedDocument, pair: documentsRepository.CcPairAccess): IndexedDocument {
  return {
    document_id: p.row.id,
    semantic_identifier: p.semanticIdentifier,
    source_type: p.row.source,
    updated_at: p.row.doc_updated_at,
    tags: p.row.tags,
    document_sets: pair.document_sets,
    hidden: false,
    ...accessOf(p, pair),
    chunks: p.chunks.map(({ chunk_id, title, content, blurb, link }) => ({
      chunk_id,
      title,
      content,
      blurb,
      link,
    })),
    vocabulary: p.vocabulary,
  };
}
