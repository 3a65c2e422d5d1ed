import { basicProcedure, curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  DeletedResponse,
  McpOauthCallbackResponse,
  McpOauthConnectInput,
  McpOauthConnectResponse,
  McpServerCreateInput,
  McpServerCreateResponse,
  McpServerIdInput,
  McpServerList,
  McpServerSnapshot,
  McpServerTools,
  McpServerUpdateInput,
  McpServerUpdateResponse,
  McpUserCredentialsInput,
  McpUserCredentialsResponse,
  OAuthCallbackInput,
} from './actions.schemas.ts';
import * as actionsService from './actions.service.ts';

const tags = ['MCP servers'];

export const mcpRouter = router({
  create: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/mcp/servers/create',
        tags,
        summary: 'Connect an MCP server',
        description:
          'Admin, or a curator for groups they curate (`groups`: only their members use the server). Auth methods: NONE; API_TOKEN + ADMIN (shared key, header template with `{api_key}`); API_TOKEN + PER_USER (each user’s own key); OAUTH (per user); PT_OAUTH (the caller’s OIDC sign-in token). Secrets are stored encrypted.',
      },
    })
    .input(McpServerCreateInput)
    .output(McpServerCreateResponse)
    .mutation(({ ctx, input }) => actionsService.createMcpServer({ ctx: serviceContext(ctx), input })),

  list: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/mcp/servers',
        tags,
        summary: 'List MCP servers',
        description: 'MCP servers the caller may manage (curators: those scoped to groups they curate).',
      },
    })
    .input(McpServerIdInput.partial())
    .output(McpServerList)
    .query(({ ctx }) => actionsService.listMcpServers({ ctx: serviceContext(ctx), purpose: 'manage' })),

  get: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/mcp/servers/{server_id}',
        tags,
        summary: 'Get an MCP server',
        description: 'One MCP server with its authentication settings (secrets masked) and its stored tools.',
      },
    })
    .input(McpServerIdInput)
    .output(McpServerSnapshot)
    .query(({ ctx, input }) =>
      actionsService.getMcpServer({ ctx: serviceContext(ctx), serverId: input.server_id }),
    ),

  tools: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/mcp/server/{server_id}/tools',
        tags,
        summary: 'Fetch an MCP server’s tools',
        description:
          'Live `tools/list` with the caller’s credentials; each tool is stored with an `id` for agents’ `tool_ids`. An empty list says the URL or the authentication is wrong (`message`).',
      },
    })
    .input(McpServerIdInput)
    .output(McpServerTools)
    .query(({ ctx, input }) =>
      actionsService.fetchMcpServerTools({
        ctx: serviceContext(ctx),
        serverId: input.server_id,
      }),
    ),

  update: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/mcp/servers/update',
        tags,
        summary: 'Update an MCP server and select its tools',
        description:
          'Renames or re-describes a server, changes its groups and chooses which of its tools agents may use. Its URL never changes: create a new server to move.',
      },
    })
    .input(McpServerUpdateInput)
    .output(McpServerUpdateResponse)
    .mutation(({ ctx, input }) => actionsService.updateMcpServer({ ctx: serviceContext(ctx), input })),

  delete: curatorProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/mcp/server/{server_id}',
        tags,
        summary: 'Remove an MCP server',
        description: 'Its tools, every user’s credentials, and the tools on every agent go with it.',
      },
    })
    .input(McpServerIdInput)
    .output(DeletedResponse)
    .mutation(({ ctx, input }) =>
      actionsService.deleteMcpServer({
        ctx: serviceContext(ctx),
        serverId: input.server_id,
      }),
    ),

  listForUser: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/mcp/servers',
        tags,
        summary: 'MCP servers, with whether the caller is authenticated to each',
        description:
          'Servers the caller may use and, for per-user authentication, whether the caller has connected (a key or an OAuth sign-in).',
      },
    })
    .input(McpServerIdInput.partial())
    .output(McpServerList)
    .query(({ ctx }) => actionsService.listMcpServers({ ctx: serviceContext(ctx), purpose: 'use' })),

  saveCredentials: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/mcp/user-credentials',
        tags,
        summary: 'Store your own key for a per-user MCP server',
        description: 'Tried with `tools/list` first; stored encrypted, for the caller only.',
      },
    })
    .input(McpUserCredentialsInput)
    .output(McpUserCredentialsResponse)
    .mutation(({ ctx, input }) => actionsService.saveUserCredentials({ ctx: serviceContext(ctx), input })),

  deleteCredentials: basicProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/mcp/user-credentials/{server_id}',
        tags,
        summary: 'Remove your key for an MCP server',
        description:
          "Forgets the caller's own key or OAuth tokens for the server; its tools are left out of the caller's chats until they connect again.",
      },
    })
    .input(McpServerIdInput)
    .output(DeletedResponse)
    .mutation(({ ctx, input }) =>
      actionsService.deleteUserCredentials({
        ctx: serviceContext(ctx),
        serverId: input.server_id,
      }),
    ),

  oauthConnect: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/mcp/oauth/connect',
        tags,
        summary: 'Connect your account to an OAuth MCP server: get the authorization URL',
        description:
          'Discovers the server’s protected-resource metadata (RFC 9728) and its authorization server (RFC 8414 / OIDC discovery), registers kas dynamically (RFC 7591) when the admin gave no `oauth_client_id`, and answers an authorization URL with PKCE (S256) and a one-time state valid for 10 minutes.',
      },
    })
    .input(McpOauthConnectInput)
    .output(McpOauthConnectResponse)
    .mutation(({ ctx, input }) => actionsService.connectMcpOauth({ ctx: serviceContext(ctx), input })),

  oauthCallback: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/mcp/oauth/callback',
        tags,
        summary: 'Finish connecting to an OAuth MCP server: exchange the code',
        description:
          'Stores your tokens encrypted, for you only; they are refreshed before expiry and once after a 401.',
      },
    })
    .input(OAuthCallbackInput)
    .output(McpOauthCallbackResponse)
    .mutation(({ ctx, input }) => actionsService.mcpOauthCallback({ ctx: serviceContext(ctx), input })),
});
