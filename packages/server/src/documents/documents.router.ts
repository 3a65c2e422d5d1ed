import { z } from 'zod';
import { curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  CcPairIdInput,
  DocMinimalInfo,
  DocumentIdInput,
  IngestBatchInput,
  IngestBatchOutput,
  IngestDocumentInput,
  IngestionResult,
} from './documents.schemas.ts';
import * as documentsService from './documents.service.ts';

const tags = ['Document ingestion'];

export const documentsRouter = router({
  ingest: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/svc-api/ingestion',
        tags,
        summary: 'Ingest a document',
        description:
          'Creates the document, or replaces it in place when its id exists (unchanged content is not re-indexed). ' +
          'An omitted id is derived from the content. `already_existed` is true when the id existed before the call.',
      },
    })
    .input(IngestDocumentInput)
    .output(IngestionResult)
    .mutation(({ ctx, input }) =>
      documentsService.ingestDocument({ ctx: serviceContext(ctx), input, actor: ctx.actor }),
    ),

  ingestBatch: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/svc-api/ingestion/batch',
        tags,
        summary: 'Ingest several documents',
        description:
          'Each document is ingested as by `POST /svc-api/ingestion` (created, replaced in place, or left alone ' +
          'when unchanged; idempotent by id), and written together with the others in a few statements. ' +
          'Each is answered on its own, in the order sent: its `document_id` and `already_existed`, or the ' +
          '`error` that refused that document alone. At most `KAS_INGESTION_BATCH_MAX` documents (default 100; 413 beyond).',
      },
    })
    .input(IngestBatchInput)
    .output(IngestBatchOutput)
    .mutation(({ ctx, input }) =>
      documentsService.ingestBatch({ ctx: serviceContext(ctx), input, actor: ctx.actor }),
    ),

  listIngested: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/svc-api/ingestion',
        tags,
        summary: 'List documents ingested through this API',
        description:
          'Every document added with `POST /api/svc-api/ingestion` that the caller manages (curators: the pairs they manage).',
      },
    })
    .input(z.object({}))
    .output(z.array(DocMinimalInfo))
    .query(({ ctx }) => documentsService.listIngestedDocuments({ ctx: serviceContext(ctx) })),

  deleteIngested: curatorProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/svc-api/ingestion/{document_id}',
        tags,
        summary: 'Delete an ingested document',
        description:
          'Removes the document from the index and the database. Only documents ingested through this API.',
      },
    })
    .input(DocumentIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      documentsService.deleteIngestedDocument({
        ctx: serviceContext(ctx),
        documentId: input.document_id,
      }),
    ),

  listCcPairDocuments: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/svc-api/connector-docs/{cc_pair_id}',
        tags,
        summary: 'List the documents of a CC pair',
        description: 'The documents a connector-credential pair owns (id, title, link).',
      },
    })
    .input(CcPairIdInput)
    .output(z.array(DocMinimalInfo))
    .query(({ ctx, input }) =>
      documentsService.listCcPairDocuments({
        ctx: serviceContext(ctx),
        ccPairId: input.cc_pair_id,
      }),
    ),
});
