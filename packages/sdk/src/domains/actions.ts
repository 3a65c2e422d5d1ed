import { type KasRestClient, unwrap } from '../client-core.ts';
import type { components } from '../generated/openapi.ts';
import type { RequestBody } from '../types.ts';

type S = components['schemas'];
/** A tool with its action configuration (header values masked). */
export type ToolDetail = S['ToolDetail'];
/** One operation of an OpenAPI action: method, path, summary and the function name. */
export type MethodSpec = S['MethodSpec'];
/** Fields of a new OpenAPI action: `definition` (object or the file's text), `custom_headers`, `passthrough_auth`, `oauth_config_id`. */
export type OpenApiActionInput = RequestBody<'/api/admin/tool/custom', 'post'>;
/** Fields of a new MCP server: `name`, `server_url`, `transport`, `auth_type`, `auth_performer`, `api_token`, `auth_template`. */
export type McpServerInput = RequestBody<'/api/admin/mcp/servers/create', 'post'>;
/** An MCP server as listed. */
export type McpServer = S['McpServerSnapshot'];
/** An MCP server's tools, each with the `id` to put in an agent's `tool_ids`. */
export type McpServerTools = S['McpServerTools'];
/** An OAuth configuration (secrets never returned; `redirect_uri` to register). */
export type OAuthConfig = S['OAuthConfigSnapshot'];

/** OpenAPI actions, MCP servers and OAuth configurations. */
export function actionsApi(rest: KasRestClient) {
  return {
    /** The operations a definition would offer, or an ApiError naming the path and operation at fault. */
    validateOpenApi: (definition: OpenApiActionInput['definition']): Promise<MethodSpec[]> =>
      unwrap(rest.POST('/api/admin/tool/custom/validate', { body: { definition } })).then((r) => r.methods),
    /** Registers an OpenAPI action (admin); enable it on an agent through `tool_ids`. */
    createOpenApiAction: (input: OpenApiActionInput): Promise<ToolDetail> =>
      unwrap(rest.POST('/api/admin/tool/custom', { body: input })),
    /** Updates an OpenAPI action (partial; masked header values keep their stored value). */
    updateOpenApiAction: (toolId: number, input: Partial<OpenApiActionInput>): Promise<ToolDetail> =>
      unwrap(
        rest.PUT('/api/admin/tool/custom/{tool_id}', { params: { path: { tool_id: toolId } }, body: input }),
      ),
    /** Deletes an OpenAPI action; it leaves every agent. */
    deleteOpenApiAction: async (toolId: number): Promise<void> => {
      await unwrap(
        rest.DELETE('/api/admin/tool/custom/{tool_id}', { params: { path: { tool_id: toolId } } }),
      );
    },
    /** One tool with its configuration. */
    getTool: (toolId: number): Promise<ToolDetail> =>
      unwrap(rest.GET('/api/tool/{tool_id}', { params: { path: { tool_id: toolId } } })),
    /** Connects an MCP server (admin). */
    createMcpServer: (input: McpServerInput) =>
      unwrap(rest.POST('/api/admin/mcp/servers/create', { body: input })),
    /** Lists the server's tools live and stores them; an empty list comes with a `message` saying why. */
    fetchMcpTools: (serverId: number): Promise<McpServerTools> =>
      unwrap(
        rest.GET('/api/admin/mcp/server/{server_id}/tools', { params: { path: { server_id: serverId } } }),
      ),
    /** MCP servers with whether the caller is authenticated to each. */
    listMcpServers: (): Promise<McpServer[]> =>
      unwrap(rest.GET('/api/mcp/servers', {})).then((r) => r.mcp_servers),
    /** Selects which of a server's tools agents may use. */
    selectMcpTools: (serverId: number, selectedTools: string[]) =>
      unwrap(
        rest.POST('/api/admin/mcp/servers/update', {
          body: { server_id: serverId, selected_tools: selectedTools },
        }),
      ),
    /** Removes an MCP server; its tools leave every agent. */
    deleteMcpServer: async (serverId: number): Promise<void> => {
      await unwrap(
        rest.DELETE('/api/admin/mcp/server/{server_id}', { params: { path: { server_id: serverId } } }),
      );
    },
    /** Stores the caller's own key for a per-user MCP server (tried first). */
    saveMcpCredentials: (serverId: number, credentials: Record<string, string>) =>
      unwrap(rest.POST('/api/mcp/user-credentials', { body: { server_id: serverId, credentials } })),
    /**
     * Starts connecting the caller's account to an OAuth MCP server: open `authorization_url` (unless
     * `status` is `already_authenticated`), then call `finishMcpOAuth` with the code and state.
     */
    startMcpOAuth: (serverId: number, options: { forceReauthentication?: boolean } = {}) =>
      unwrap(
        rest.POST('/api/mcp/oauth/connect', {
          body: {
            server_id: serverId,
            ...(options.forceReauthentication ? { force_reauthentication: true } : {}),
          },
        }),
      ),
    /** Finishes connecting to an OAuth MCP server: exchanges the code for the caller's tokens. */
    finishMcpOAuth: (code: string, state: string) =>
      unwrap(rest.POST('/api/mcp/oauth/callback', { body: { code, state } })),
    /** Creates an OAuth configuration for OpenAPI actions (admin). */
    createOAuthConfig: (input: RequestBody<'/api/admin/oauth-config/create', 'post'>): Promise<OAuthConfig> =>
      unwrap(rest.POST('/api/admin/oauth-config/create', { body: input })),
    /** Starts connecting the caller's account: open `authorization_url`, then call `finishOAuth` with the code and state. */
    startOAuth: (oauthConfigId: number) =>
      unwrap(rest.POST('/api/oauth-config/initiate', { body: { oauth_config_id: oauthConfigId } })),
    /** Finishes connecting: exchanges the code for the caller's token. */
    finishOAuth: (code: string, state: string) =>
      unwrap(rest.POST('/api/oauth-config/callback', { body: { code, state } })),
  };
}
