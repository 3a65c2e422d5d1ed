import { z } from 'zod';
import { UploadedFile } from '../files/files.schemas.ts';

/** Most files in one connector upload (a zip counts as one). */
export const MAX_CONNECTOR_UPLOAD_FILES = 50;

export const ConnectorFileUploadInput = z.object({ files: z.array(UploadedFile) });
export type ConnectorFileUploadInput = z.infer<typeof ConnectorFileUploadInput>;

export const ConnectorFileUploadResponse = z
  .object({
    file_paths: z
      .array(z.string())
      .meta({ description: 'Stored file ids: the `file_locations` of a file connector' }),
    file_names: z.array(z.string()),
    zip_metadata_file_id: z
      .string()
      .nullable()
      .meta({ description: 'The stored metadata (`.onyx_metadata.json` of the zips), or null' }),
  })
  .meta({ id: 'ConnectorFileUploadResponse' });
export type ConnectorFileUploadResponse = z.infer<typeof ConnectorFileUploadResponse>;

export const ConnectorEventInput = z.object({
  connector_id: z.number().int(),
  /** Filled by the REST adapter: the request's headers (lower-case names) and its body exactly as sent. */
  headers: z.record(z.string(), z.string()),
  raw_body: z.string(),
});
export type ConnectorEventInput = z.infer<typeof ConnectorEventInput>;

export const ConnectorEventResponse = z
  .object({
    success: z.boolean(),
    /** Slack's `url_verification`: the challenge to echo. */
    challenge: z.string().optional(),
    queued: z
      .number()
      .int()
      .meta({
        description:
          'Events stored for the worker (one per pair whose credential verified the delivery); the affected ' +
          "documents are re-indexed in the background; progress and errors show in the pair's `events`",
      }),
  })
  .meta({ id: 'ConnectorEventResponse' });
export type ConnectorEventResponse = z.infer<typeof ConnectorEventResponse>;
