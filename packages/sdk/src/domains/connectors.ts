import { type KasRestClient, unwrap } from '../client-core.ts';
import { ApiError } from '../errors.ts';
import type { components } from '../generated/openapi.ts';
import type { RequestBody } from '../types.ts';

type S = components['schemas'];
/** Fields of a new connector: `name`, `source`, `input_type`, `connector_specific_config`, `access_type`, … */
export type ConnectorInput = RequestBody<'/api/manage/admin/connector', 'post'>;
/** A connector as listed and updated. */
export type Connector = S['ConnectorSnapshot'];
/** A credential; secret values come back masked (`********`). */
export type Credential = S['CredentialSnapshot'];
/** A CC pair with its state, last attempt and the running attempt's progress. */
export type CcPair = S['CcPairDetails'];
/** Progress of a running index attempt: documents done, total when known, rate and ETA. */
export type IndexingProgress = S['IndexingProgress'];

/** A file for a `file` connector: `.txt`, `.md`, `.html`, `.pdf`, `.docx`, or a `.zip` (with `.onyx_metadata.json`). */
export interface ConnectorUploadFile {
  name: string;
  content: Blob | Uint8Array | string;
  type?: string;
}
/** The stored files: pass them as the `file` connector's config (see `fileConnectorConfig`). */
export type ConnectorFileUpload = S['ConnectorFileUploadResponse'];

/** The `file` connector's `connector_specific_config` for an upload's answer. */
export function fileConnectorConfig(upload: ConnectorFileUpload): {
  file_locations: string[];
  file_names: string[];
  zip_metadata_file_id: string | null;
} {
  return {
    file_locations: upload.file_paths,
    file_names: upload.file_names,
    zip_metadata_file_id: upload.zip_metadata_file_id,
  };
}

/** Connectors, credentials, CC pairs and their index attempts (admin or curator). */
export function connectorsApi(
  rest: KasRestClient,
  options: { baseUrl?: string; apiKey?: string; fetch?: typeof fetch } = {},
) {
  const api = {
    /**
     * Uploads files for a `file` connector (multipart); answers `{file_paths, file_names, zip_metadata_file_id}`,
     * which `fileConnectorConfig` turns into the connector's config.
     */
    uploadFiles: async (files: ConnectorUploadFile[]): Promise<ConnectorFileUpload> => {
      const form = new FormData();
      for (const file of files) {
        const blob =
          file.content instanceof Blob
            ? file.content
            : new Blob([file.content as BlobPart], { type: file.type ?? 'application/octet-stream' });
        form.append('files', blob, file.name);
      }
      const response = await (options.fetch ?? fetch)(
        `${options.baseUrl ?? ''}/api/manage/admin/connector/file/upload`,
        {
          method: 'POST',
          headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
          body: form,
        },
      );
      if (!response.ok) throw await ApiError.fromResponse(response);
      return (await response.json()) as ConnectorFileUpload;
    },
    /** Creates a connector (400 names every bad or missing configuration key). */
    create: (input: ConnectorInput): Promise<{ id: number }> =>
      unwrap(rest.POST('/api/manage/admin/connector', { body: input })),
    /** Connectors the caller manages, optionally those linked to one credential. */
    list: (credentialId?: number): Promise<Connector[]> =>
      unwrap(
        rest.GET('/api/manage/admin/connector', {
          params: { query: credentialId === undefined ? {} : { credential: credentialId } },
        }),
      ),
    update: (connectorId: number, input: Partial<ConnectorInput>): Promise<Connector> =>
      unwrap(
        rest.PATCH('/api/manage/admin/connector/{connector_id}', {
          params: { path: { connector_id: connectorId } },
          body: input,
        }),
      ),
    /** Deletes a connector without CC pairs. */
    delete: async (connectorId: number): Promise<void> => {
      await unwrap(
        rest.DELETE('/api/manage/admin/connector/{connector_id}', {
          params: { path: { connector_id: connectorId } },
        }),
      );
    },
    /** Queues an immediate run (all linked credentials by default). */
    runOnce: (connectorId: number, options: { credentialIds?: number[]; fromBeginning?: boolean } = {}) =>
      unwrap(
        rest.POST('/api/manage/admin/connector/run-once', {
          body: {
            connector_id: connectorId,
            from_beginning: options.fromBeginning ?? false,
            ...(options.credentialIds ? { credential_ids: options.credentialIds } : {}),
          },
        }),
      ),
    /** Every CC pair the caller manages with its state and progress. */
    indexingStatus: (): Promise<S['IndexingStatusEntry'][]> =>
      unwrap(rest.GET('/api/manage/admin/connector/indexing-status')),
    credentials: {
      create: (input: RequestBody<'/api/manage/credential', 'post'>): Promise<Credential> =>
        unwrap(rest.POST('/api/manage/credential', { body: input })),
      list: (): Promise<Credential[]> => unwrap(rest.GET('/api/manage/credential')),
      delete: async (credentialId: number): Promise<void> => {
        await unwrap(
          rest.DELETE('/api/manage/credential/{credential_id}', {
            params: { path: { credential_id: credentialId } },
          }),
        );
      },
    },
    pairs: {
      /** Links a connector to a credential; returns the new CC pair id (its first run is queued). */
      create: async (
        connectorId: number,
        credentialId: number,
        input: { name: string; access_type?: 'public' | 'private' | 'sync'; groups?: number[] },
      ): Promise<number> => {
        const result = await unwrap(
          rest.PUT('/api/manage/connector/{connector_id}/credential/{credential_id}', {
            params: { path: { connector_id: connectorId, credential_id: credentialId } },
            body: input,
          }),
        );
        return result.data as number;
      },
      get: (ccPairId: number): Promise<CcPair> =>
        unwrap(
          rest.GET('/api/manage/admin/cc-pair/{cc_pair_id}', { params: { path: { cc_pair_id: ccPairId } } }),
        ),
      /** `paused` stops a running attempt within seconds; `active` resumes from its checkpoint. */
      setStatus: (ccPairId: number, status: 'active' | 'paused') =>
        unwrap(
          rest.PUT('/api/manage/admin/cc-pair/{cc_pair_id}/status', {
            params: { path: { cc_pair_id: ccPairId } },
            body: { status },
          }),
        ),
      attempts: (ccPairId: number, page = 0, pageSize = 10) =>
        unwrap(
          rest.GET('/api/manage/admin/cc-pair/{cc_pair_id}/index-attempts', {
            params: { path: { cc_pair_id: ccPairId }, query: { page_num: page, page_size: pageSize } },
          }),
        ),
      errors: (ccPairId: number, page = 0, pageSize = 10) =>
        unwrap(
          rest.GET('/api/manage/admin/cc-pair/{cc_pair_id}/errors', {
            params: { path: { cc_pair_id: ccPairId }, query: { page_num: page, page_size: pageSize } },
          }),
        ),
      /** Deletes the pair in the background (documents no other pair owns go too). */
      delete: (connectorId: number, credentialId: number) =>
        unwrap(
          rest.POST('/api/manage/admin/deletion-attempt', {
            body: { connector_id: connectorId, credential_id: credentialId },
          }),
        ),
      /**
       * Polls a pair until its last attempt has ended, calling `onProgress` with each state; resolves
       * with the final details.
       */
      waitForIndexing: async (
        ccPairId: number,
        options: { intervalMs?: number; timeoutMs?: number; onProgress?: (pair: CcPair) => void } = {},
      ): Promise<CcPair> => {
        const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
        for (;;) {
          const pair = await api.pairs.get(ccPairId);
          options.onProgress?.(pair);
          const ended = !pair.indexing && pair.last_index_attempt_status !== 'not_started';
          if (ended && pair.last_index_attempt_status !== null) return pair;
          if (Date.now() > deadline) throw new Error(`CC pair ${ccPairId} is still indexing`);
          await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500));
        }
      },
    },
  };
  return api;
}
