import { curatorProcedure, router, serviceContext, webhookProcedure } from '../trpc.ts';
import * as connectorsService from './connectors.service.ts';
import {
  ConnectorEventInput,
  ConnectorEventResponse,
  ConnectorFileUploadInput,
  ConnectorFileUploadResponse,
  MAX_CONNECTOR_UPLOAD_FILES,
} from './sources.schemas.ts';

const tags = ['Connectors'];

/** What particular sources add to the connector endpoints: file uploads and webhook events. */
export const connectorSourcesRouter = router({
  uploadFiles: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/connector/file/upload',
        tags,
        summary: 'Upload files for a file connector',
        description:
          'Multipart form with one or more `files` fields: .txt, .md, .html, .pdf, .docx, or .zip (expanded; a ' +
          '`.onyx_metadata.json` inside gives per-file `link`, `file_display_name`, `primary_owners`, ' +
          '`secondary_owners`, `doc_updated_at` and metadata). The answer gives the connector config ' +
          '`{file_locations: file_paths, file_names, zip_metadata_file_id}`.',
      },
      multipart: { field: 'files', maxFiles: MAX_CONNECTOR_UPLOAD_FILES },
    })
    .input(ConnectorFileUploadInput)
    .output(ConnectorFileUploadResponse)
    .mutation(({ ctx, input }) =>
      connectorsService.uploadConnectorFiles({ ctx: serviceContext(ctx), input }),
    ),

  event: webhookProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/connector/{connector_id}/event',
        tags,
        summary: "Receive a source's webhook (input_type event)",
        protect: false,
        description:
          'No API key: the delivery is authenticated by its signature. GitHub webhooks (`X-Hub-Signature-256`, ' +
          "HMAC-SHA256 with the credential's `github_webhook_secret`) and the Slack Events API " +
          "(`X-Slack-Signature`/`X-Slack-Request-Timestamp` with the credential's `slack_signing_secret`; " +
          '`url_verification` answers the challenge). Re-indexes just the affected documents. 404 when no ' +
          'active pair’s credential verifies the signature, exactly as for an absent connector.',
      },
      rawBody: true,
    })
    .input(ConnectorEventInput)
    .output(ConnectorEventResponse)
    .mutation(({ ctx, input }) =>
      connectorsService.handleConnectorEvent({ ctx: serviceContext(ctx), input }),
    ),
});
