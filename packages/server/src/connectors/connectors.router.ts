import { z } from 'zod';
import { curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  CcPairDetails,
  CcPairIdInput,
  CcPairStatusInput,
  ConnectorCreateInput,
  ConnectorCredentialInput,
  ConnectorIdInput,
  ConnectorListInput,
  ConnectorSnapshot,
  ConnectorUpdateInput,
  CredentialCreateInput,
  CredentialIdInput,
  CredentialListInput,
  CredentialSnapshot,
  CredentialUpdateInput,
  DeletionAttemptInput,
  IndexAttemptErrorPage,
  IndexAttemptPage,
  IndexingStatusEntry,
  PageInput,
  RunOnceInput,
  StatusResponse,
} from './connectors.schemas.ts';
import * as connectorsService from './connectors.service.ts';

const tags = ['Connectors'];
const credentialTags = ['Credentials'];

export const connectorsRouter = router({
  create: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/connector',
        tags,
        summary: 'Create a connector',
        description:
          'Not yet linked to credentials nor indexed. 400 names every bad or missing key of the configuration.',
      },
    })
    .input(ConnectorCreateInput)
    .output(z.object({ id: z.number().int() }))
    .mutation(({ ctx, input }) => connectorsService.createConnector({ ctx: serviceContext(ctx), input })),

  list: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/connector',
        tags,
        summary: 'List connectors',
        description:
          'Connectors the caller may manage, optionally those linked to one credential; system connectors excluded.',
      },
    })
    .input(ConnectorListInput)
    .output(z.array(ConnectorSnapshot))
    .query(({ ctx, input }) =>
      connectorsService.listConnectors({
        ctx: serviceContext(ctx),
        credential: input.credential,
      }),
    ),

  update: curatorProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/admin/connector/{connector_id}',
        tags,
        summary: 'Update a connector',
        description:
          "Replaces a connector's configuration; the next index attempt uses it. Moving a linked connector to another origin needs the credential's secrets entered again (400 `SECRET_REENTRY_REQUIRED`).",
      },
    })
    .input(ConnectorUpdateInput)
    .output(ConnectorSnapshot)
    .mutation(({ ctx, input }) => connectorsService.updateConnector({ ctx: serviceContext(ctx), input })),

  delete: curatorProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/manage/admin/connector/{connector_id}',
        tags,
        summary: 'Delete a connector',
        description: '400 while CC pairs remain (delete them with a deletion attempt first).',
      },
    })
    .input(ConnectorIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      connectorsService.deleteConnector({
        ctx: serviceContext(ctx),
        id: input.connector_id,
      }),
    ),

  runOnce: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/connector/run-once',
        tags,
        summary: 'Queue an immediate run',
        description:
          'For the given credentials (default: all linked); `from_beginning` re-indexes everything.',
      },
    })
    .input(RunOnceInput)
    .output(StatusResponse)
    .mutation(({ ctx, input }) => connectorsService.runOnce({ ctx: serviceContext(ctx), input })),

  indexingStatus: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/connector/indexing-status',
        tags,
        summary: 'Indexing status of every CC pair',
        description:
          'State, last attempt, and the running attempt’s progress (documents done, total, rate, ETA).',
      },
    })
    .input(z.object({}))
    .output(z.array(IndexingStatusEntry))
    .query(({ ctx }) => connectorsService.indexingStatus({ ctx: serviceContext(ctx) })),

  createCredential: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/credential',
        tags: credentialTags,
        summary: 'Create a credential',
        description:
          '`credential_json` is validated for its source, encrypted at rest and masked on every read.',
      },
    })
    .input(CredentialCreateInput)
    .output(CredentialSnapshot)
    .mutation(({ ctx, input }) => connectorsService.createCredential({ ctx: serviceContext(ctx), input })),

  listCredentials: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/credential',
        tags: credentialTags,
        summary: 'List credentials',
        description:
          'The credentials the caller may manage, optionally of one `source`; secrets are masked as `********`.',
      },
    })
    .input(CredentialListInput)
    .output(z.array(CredentialSnapshot))
    .query(({ ctx, input }) =>
      connectorsService.listCredentials({ ctx: serviceContext(ctx), source: input.source }),
    ),

  getCredential: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/credential/{credential_id}',
        tags: credentialTags,
        summary: 'Get a credential',
        description: 'One credential with its secrets masked as `********`.',
      },
    })
    .input(CredentialIdInput)
    .output(CredentialSnapshot)
    .query(({ ctx, input }) =>
      connectorsService.getCredential({
        ctx: serviceContext(ctx),
        id: input.credential_id,
      }),
    ),

  updateCredential: curatorProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/credential/{credential_id}',
        tags: credentialTags,
        summary: 'Update a credential',
        description: 'Values sent back masked (`********`) keep their stored value.',
      },
    })
    .input(CredentialUpdateInput)
    .output(CredentialSnapshot)
    .mutation(({ ctx, input }) => connectorsService.updateCredential({ ctx: serviceContext(ctx), input })),

  deleteCredential: curatorProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/manage/credential/{credential_id}',
        tags: credentialTags,
        summary: 'Delete a credential',
        description: '400 while a CC pair uses it.',
      },
    })
    .input(CredentialIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      connectorsService.deleteCredential({
        ctx: serviceContext(ctx),
        id: input.credential_id,
      }),
    ),

  createPair: curatorProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/manage/connector/{connector_id}/credential/{credential_id}',
        tags,
        summary: 'Link a connector to a credential (create a CC pair)',
        description:
          '`data` is the new CC pair id; it is scheduled for its first run. Curators must name groups they curate.',
      },
    })
    .input(
      z.object({
        connector_id: z.number().int(),
        credential_id: z.number().int(),
        name: z.string().trim().min(1).max(256),
        access_type: z.enum(['public', 'private', 'sync']).default('public'),
        groups: z.array(z.number().int()).default([]),
      }),
    )
    .output(StatusResponse)
    .mutation(({ ctx, input }) => connectorsService.createPair({ ctx: serviceContext(ctx), input })),

  dissociate: curatorProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/manage/connector/{connector_id}/credential/{credential_id}',
        tags,
        summary: 'Unlink a connector from a credential',
        description: 'Deletes the CC pair in the background, as a deletion attempt does.',
      },
    })
    .input(ConnectorCredentialInput)
    .output(StatusResponse)
    .mutation(({ ctx, input }) =>
      connectorsService.startDeletion({
        ctx: serviceContext(ctx),
        connectorId: input.connector_id,
        credentialId: input.credential_id,
      }),
    ),

  deletionAttempt: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/deletion-attempt',
        tags,
        summary: 'Delete a CC pair',
        description:
          'Status becomes `deleting`, running attempts are cancelled, and documents no other pair owns are removed in the background; a failure is shown on the pair and retried.',
      },
    })
    .input(DeletionAttemptInput)
    .output(StatusResponse)
    .mutation(({ ctx, input }) =>
      connectorsService.startDeletion({
        ctx: serviceContext(ctx),
        connectorId: input.connector_id,
        credentialId: input.credential_id,
      }),
    ),

  getPair: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/cc-pair/{cc_pair_id}',
        tags,
        summary: 'CC pair details',
        description:
          "Status, access type, documents indexed, the running attempt's progress (`docs_done`, `docs_total`, `docs_per_second`, `eta_seconds`, `waiting_until`), the last failure and the webhook events queue.",
      },
    })
    .input(CcPairIdInput)
    .output(CcPairDetails)
    .query(({ ctx, input }) =>
      connectorsService.getPairDetails({ ctx: serviceContext(ctx), id: input.cc_pair_id }),
    ),

  setPairStatus: curatorProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/manage/admin/cc-pair/{cc_pair_id}/status',
        tags,
        summary: 'Pause or resume a CC pair',
        description:
          'A running attempt stops within seconds and keeps what it indexed; resuming continues from its checkpoint.',
      },
    })
    .input(CcPairStatusInput)
    .output(StatusResponse)
    .mutation(({ ctx, input }) =>
      connectorsService.setPairStatus({
        ctx: serviceContext(ctx),
        id: input.cc_pair_id,
        status: input.status,
      }),
    ),

  indexAttempts: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/cc-pair/{cc_pair_id}/index-attempts',
        tags,
        summary: 'Index attempts of a CC pair, newest first',
        description:
          "Each attempt's status, documents indexed, errors and checkpoint origin (`resumed_from`), `page_size` at a time.",
      },
    })
    .input(PageInput)
    .output(IndexAttemptPage)
    .query(({ ctx, input }) => connectorsService.listAttempts({ ctx: serviceContext(ctx), input })),

  errors: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/cc-pair/{cc_pair_id}/errors',
        tags,
        summary: 'Per-document errors of a CC pair, newest first',
        description:
          'Items an attempt could not index (too large, refused by the source, a broken link) with their reason and link; the other items were indexed.',
      },
    })
    .input(PageInput)
    .output(IndexAttemptErrorPage)
    .query(({ ctx, input }) => connectorsService.listErrors({ ctx: serviceContext(ctx), input })),
});
