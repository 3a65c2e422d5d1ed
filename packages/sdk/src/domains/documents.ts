import { type KasRestClient, unwrap } from '../client-core.ts';
import type { components } from '../generated/openapi.ts';
import type { RequestBody } from '../types.ts';

type S = components['schemas'];
/** A document to ingest: `semantic_identifier`, `sections` and optional `id`, `source`, `metadata`, … */
export type IngestedDocument = S['IngestedDocument'];
/** One document's answer in a batch: `document_id`, `already_existed`, or its own `error`. */
export type BatchIngestionResult = S['BatchIngestionResult'];
/** Admin search filters: `source_type`, `document_set`, `time_cutoff`, `tags`. */
export type SearchFilters = S['BaseFilters'];

/** Document ingestion, document sets and admin search. */
export function documentsApi(rest: KasRestClient) {
  return {
    /** Ingests or replaces (same id) one document; `already_existed` is true when the id existed before. */
    ingest: (document: IngestedDocument, ccPairId?: number): Promise<S['IngestionResult']> =>
      unwrap(
        rest.POST('/api/svc-api/ingestion', {
          body: { document, ...(ccPairId === undefined ? {} : { cc_pair_id: ccPairId }) },
        }),
      ),
    /**
     * Ingests up to the server's batch limit (`KAS_INGESTION_BATCH_MAX`, default 100) documents in one
     * request, written together; each is answered on its own, in order: `document_id` and
     * `already_existed`, or the `error` that refused that document alone.
     */
    ingestBatch: (documents: IngestedDocument[], ccPairId?: number): Promise<S['BatchIngestionResult'][]> =>
      unwrap(
        rest.POST('/api/svc-api/ingestion/batch', {
          body: { documents, ...(ccPairId === undefined ? {} : { cc_pair_id: ccPairId }) },
        }),
      ).then((output) => output.results),
    /** Every document ingested through the API. */
    list: (): Promise<S['DocMinimalInfo'][]> => unwrap(rest.GET('/api/svc-api/ingestion')),
    /** Deletes an API-ingested document from the index and the database. */
    delete: async (documentId: string): Promise<void> => {
      await unwrap(
        rest.DELETE('/api/svc-api/ingestion/{document_id}', {
          params: { path: { document_id: documentId } },
        }),
      );
    },
    /** The documents of a connector-credential pair. */
    ofCcPair: (ccPairId: number): Promise<S['DocMinimalInfo'][]> =>
      unwrap(
        rest.GET('/api/svc-api/connector-docs/{cc_pair_id}', { params: { path: { cc_pair_id: ccPairId } } }),
      ),
    /** Admin search (admin or curator): one result per document, best first. */
    search: (query: string, filters: SearchFilters = {}): Promise<S['AdminSearchResponse']> =>
      unwrap(rest.POST('/api/admin/search', { body: { query, filters } })),
    sets: {
      /** The document sets the caller can see. */
      list: (): Promise<S['DocumentSet'][]> => unwrap(rest.GET('/api/manage/document-set')),
      create: (input: RequestBody<'/api/manage/admin/document-set', 'post'>): Promise<S['DocumentSet']> =>
        unwrap(rest.POST('/api/manage/admin/document-set', { body: input })),
      update: (input: RequestBody<'/api/manage/admin/document-set', 'patch'>): Promise<S['DocumentSet']> =>
        unwrap(rest.PATCH('/api/manage/admin/document-set', { body: input })),
      delete: async (documentSetId: number): Promise<void> => {
        await unwrap(
          rest.DELETE('/api/manage/admin/document-set/{document_set_id}', {
            params: { path: { document_set_id: documentSetId } },
          }),
        );
      },
    },
  };
}
