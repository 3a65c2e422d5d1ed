import { z } from 'zod';
import { basicProcedure, curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  CreateDocumentSetInput,
  DocumentSet,
  DocumentSetIdInput,
  UpdateDocumentSetInput,
} from './document-sets.schemas.ts';
import * as documentSetsService from './document-sets.service.ts';

const tags = ['Document sets'];

export const documentSetsRouter = router({
  create: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/document-set',
        tags,
        summary: 'Create a document set',
        description: 'A document set groups CC pairs; agents and search filters scope by it.',
      },
    })
    .input(CreateDocumentSetInput)
    .output(DocumentSet)
    .mutation(({ ctx, input }) => documentSetsService.createDocumentSet({ ctx: serviceContext(ctx), input })),

  update: curatorProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/admin/document-set',
        tags,
        summary: 'Update a document set',
        description: 'Fields left out are unchanged; lists given replace the current ones.',
      },
    })
    .input(UpdateDocumentSetInput)
    .output(DocumentSet)
    .mutation(({ ctx, input }) => documentSetsService.updateDocumentSet({ ctx: serviceContext(ctx), input })),

  delete: curatorProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/manage/admin/document-set/{document_set_id}',
        tags,
        summary: 'Delete a document set',
        description:
          'Removes the set; its documents stay (in their CC pairs) and leave the set at once. An admin, or the curator who created it.',
      },
    })
    .input(DocumentSetIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      documentSetsService.deleteDocumentSet({
        ctx: serviceContext(ctx),
        id: input.document_set_id,
      }),
    ),

  list: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/document-set',
        tags,
        summary: "List the caller's document sets",
        description:
          'Admins see every set; others the public ones, their own, and those shared with them or their groups.',
      },
    })
    .input(z.object({}))
    .output(z.array(DocumentSet))
    .query(({ ctx }) => documentSetsService.listDocumentSets({ ctx: serviceContext(ctx) })),
});
