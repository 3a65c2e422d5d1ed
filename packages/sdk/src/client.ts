import createClient from 'openapi-fetch';
import { type KasRestClient, unwrap } from './client-core.ts';
import { actionsApi } from './domains/actions.ts';
import { agentsApi, groupsApi } from './domains/agents.ts';
import { chatApi } from './domains/chat.ts';
import { connectorsApi } from './domains/connectors.ts';
import { documentsApi } from './domains/documents.ts';
import type { components, paths } from './generated/openapi.ts';
import { createTrpcClient, type KasTrpcClient, toApiError } from './trpc.ts';

/** Options for {@link createKasClient}. */
export interface KasClientOptions {
  /** Where kas runs, e.g. `http://127.0.0.1:8080` (no `/api` suffix). */
  baseUrl: string;
  /** An API key (`svck-…`); sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** A fetch implementation (defaults to the global one). */
  fetch?: typeof fetch;
}

/** `ApiKeyDescriptor` as the API returns it. */
export type ApiKeyDescriptor = components['schemas']['ApiKeyDescriptor'];
/** A key role. */
export type Role = components['schemas']['Role'];

/** The kas client: typed tRPC and REST clients plus helpers per domain. */
export interface KasClient {
  /** The typed tRPC client (superjson over `/api/trpc`). Errors are TRPCClientError; see {@link KasClient.call}. */
  trpc: KasTrpcClient;
  /** The REST client typed from the OpenAPI document, for the exact `/api` paths. */
  rest: KasRestClient;
  /** Runs a tRPC call and converts its errors to ApiError. */
  call<T>(fn: (trpc: KasTrpcClient) => Promise<T>): Promise<T>;
  /** API key management (admin role). */
  apiKeys: {
    list(): Promise<ApiKeyDescriptor[]>;
    create(input: { name?: string | null; role?: Role }): Promise<ApiKeyDescriptor>;
    regenerate(apiKeyId: number): Promise<ApiKeyDescriptor>;
    update(apiKeyId: number, input: { name?: string | null; role?: Role }): Promise<ApiKeyDescriptor>;
    delete(apiKeyId: number): Promise<void>;
  };
  /** Agents (personas), labels and tools. */
  agents: ReturnType<typeof agentsApi>;
  /** User groups and users. */
  groups: ReturnType<typeof groupsApi>;
  /** Document ingestion, document sets and admin search. */
  documents: ReturnType<typeof documentsApi>;
  /** Chat: sessions, `stream()` and `send()`, sharing, history search, projects, uploads. */
  chat: ReturnType<typeof chatApi>;
  /** Connectors, credentials, CC pairs, index attempts and progress. */
  connectors: ReturnType<typeof connectorsApi>;
  /** Actions: OpenAPI tools, MCP servers and OAuth configurations. */
  actions: ReturnType<typeof actionsApi>;
  /**
   * The OpenAI-compatible API's base URL (`{baseUrl}/v1`), for apps that prefer the `openai` client:
   * `new OpenAI({ baseURL: kas.openaiBaseUrl, apiKey })`, with model `kas` or `agent-{id}`.
   */
  openaiBaseUrl: string;
}

/**
 * Creates a client for a kas server.
 *
 * @example
 * const kas = createKasClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.KAS_API_KEY });
 * const keys = await kas.apiKeys.list();
 */
export function createKasClient(options: KasClientOptions): KasClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const rest = createClient<paths>({
    baseUrl,
    fetch: options.fetch,
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
  });
  const trpc = createTrpcClient({ baseUrl, apiKey: options.apiKey, fetch: options.fetch });
  return {
    trpc,
    rest,
    call: async (fn) => {
      try {
        return await fn(trpc);
      } catch (error) {
        throw toApiError(error);
      }
    },
    apiKeys: {
      list: () => unwrap(rest.GET('/api/admin/api-key')),
      create: (input) => unwrap(rest.POST('/api/admin/api-key', { body: { role: 'basic', ...input } })),
      regenerate: (apiKeyId) =>
        unwrap(
          rest.POST('/api/admin/api-key/{api_key_id}/regenerate', {
            params: { path: { api_key_id: apiKeyId } },
          }),
        ),
      update: (apiKeyId, input) =>
        unwrap(
          rest.PATCH('/api/admin/api-key/{api_key_id}', {
            params: { path: { api_key_id: apiKeyId } },
            body: input,
          }),
        ),
      delete: async (apiKeyId) => {
        await unwrap(
          rest.DELETE('/api/admin/api-key/{api_key_id}', { params: { path: { api_key_id: apiKeyId } } }),
        );
      },
    },
    agents: agentsApi(rest),
    groups: groupsApi(rest),
    documents: documentsApi(rest),
    connectors: connectorsApi(rest, { baseUrl, apiKey: options.apiKey, fetch: options.fetch }),
    actions: actionsApi(rest),
    chat: chatApi(rest, trpc, { baseUrl, apiKey: options.apiKey, fetch: options.fetch }),
    openaiBaseUrl: `${baseUrl}/v1`,
  };
}
