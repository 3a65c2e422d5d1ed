export { loadIndexedDocuments, refreshCcPairDocuments, reindexAll, syncIndex } from './service/index-sync.ts';
export { ingestBatch, ingestDocument, ingestMany } from './service/ingest.ts';
export {
  createCcPair,
  deleteIngestedDocument,
  listCcPairDocuments,
  listIngestedDocuments,
} from './service/manage.ts';
export { deriveDocumentId } from './service/prepare.ts';
export type { DocumentsDeps } from './service/shared.ts';
