import type { z } from 'zod';
import type { Actor } from '../../auth/roles.ts';
import { policy } from '../../auth/scope.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { OutboundError } from '../../outbound/outbound.ts';
import type { McpServerRow, ToolRow } from '../actions.repository.ts';
import * as actionsRepository from '../actions.repository.ts';
import type {
  McpAuthTemplate,
  McpServerCreateInput,
  McpServerSnapshot,
  McpServerTools,
  McpServerUpdateInput,
  McpUserCredentialsInput,
  McpUserCredentialsResponse,
} from '../actions.schemas.ts';
import { isAuthFailure, listMcpTools, mcpResultData, withMcpClient } from '../mcp/client.ts';
import type { AgentTool, ToolKindLoader } from '../tool-runner.ts';
import { failure } from '../tool-runner.ts';
import { scopeOfServer, serverNotFound, serverOr404, usableServer } from './mcp-access.ts';
import { mcpOauthAccessToken } from './mcp-oauth.ts';
import { canUse, checkRequestedScope, loadScope, requireManage, type Scope } from './scope.ts';

type Deps = ServiceContext<'db' | 'secrets' | 'outbound' | 'config' | 'logger'>;
type Template = z.infer<typeof McpAuthTemplate>;

/** The server's admin-side configuration, stored encrypted. */
interface AdminConfig {
  api_token?: string | undefined;
  auth_template?: Template | undefined;
  oauth_client_id?: string | undefined;
  oauth_client_secret?: string | undefined;
}

/** One user's configuration for a server, stored encrypted. */
interface UserConfig {
  credentials?: Record<string, string>;
}

const DEFAULT_TEMPLATE: Template = { headers: { Authorization: 'Bearer {api_key}' } };

function adminConfig(ctx: Pick<Deps, 'secrets'>, row: McpServerRow): AdminConfig {
  return row.admin_config_enc ? (JSON.parse(ctx.secrets.decrypt(row.admin_config_enc)) as AdminConfig) : {};
}

function placeholders(template: Template): string[] {
  const fields = new Set<string>();
  for (const value of Object.values(template.headers))
    for (const m of value.matchAll(/\{(\w+)\}/g)) if (m[1] !== 'user_email') fields.add(m[1] as string);
  return [...fields];
}

function fill(template: Template, values: Record<string, string>): Record<string, string> | null {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(template.headers)) {
    let missing = false;
    headers[name] = value.replace(/\{(\w+)\}/g, (_m, field: string) => {
      const v = values[field];
      if (v === undefined) missing = true;
      return v ?? '';
    });
    if (missing) return null;
  }
  return headers;
}

function requiredFields(ctx: Pick<Deps, 'secrets'>, row: McpServerRow): string[] {
  if (row.auth_type !== 'API_TOKEN' || row.auth_performer !== 'PER_USER') return [];
  return placeholders(adminConfig(ctx, row).auth_template ?? DEFAULT_TEMPLATE);
}

/**
 * The headers with which `actor` reaches the server, or why they cannot: per-user credentials and
 * tokens are read for this user only, so one user's key or token is never sent for another.
 */
export async function mcpHeaders(
  ctx: Deps,
  actor: Actor,
  row: McpServerRow,
): Promise<{ headers: Record<string, string> } | { missing: string }> {
  switch (row.auth_type) {
    case 'NONE':
      return { headers: {} };
    case 'PT_OAUTH':
      return actor.oidc_token
        ? { headers: { Authorization: `Bearer ${actor.oidc_token}` } }
        : { missing: 'it forwards the user’s sign-in token, and this user did not sign in through OIDC' };
    case 'API_TOKEN': {
      const config = adminConfig(ctx, row);
      const template = config.auth_template ?? DEFAULT_TEMPLATE;
      if (row.auth_performer === 'ADMIN') {
        const headers = config.api_token
          ? fill(template, { api_key: config.api_token, user_email: actor.email })
          : null;
        return headers ? { headers } : { missing: 'its shared API key is not set' };
      }
      const user = await userConfig(ctx, row.id, actor.user_id);
      const headers = user?.credentials
        ? fill(template, { ...user.credentials, user_email: actor.email })
        : null;
      return headers
        ? { headers }
        : {
            missing: `the user has not entered their key yet (POST /api/mcp/user-credentials, server_id ${row.id})`,
          };
    }
    case 'OAUTH': {
      const token = await mcpOauthAccessToken(ctx, row, actor.user_id);
      return token
        ? { headers: { Authorization: `Bearer ${token}` } }
        : {
            missing: `the user has not connected their account yet, or the connection expired (POST /api/mcp/oauth/connect, server_id ${row.id})`,
          };
    }
  }
}

/**
 * Runs `fn` with the headers; when an OAuth server refuses the token, refreshes it once and runs `fn`
 * again with the new one (the MCP authorization spec's answer to a 401 during a call).
 */
async function withAuthRetry<T>(
  ctx: Deps,
  actor: Actor,
  row: McpServerRow,
  headers: Record<string, string>,
  fn: (headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  try {
    return await fn(headers);
  } catch (error) {
    if (row.auth_type !== 'OAUTH' || !isAuthFailure(error)) throw error;
    const rejected = headers.Authorization?.replace(/^Bearer /, '');
    const token = await mcpOauthAccessToken(ctx, row, actor.user_id, { rejected });
    if (!token || token === rejected) throw error;
    return fn({ ...headers, Authorization: `Bearer ${token}` });
  }
}

async function userConfig(ctx: Deps, serverId: number, userId: string): Promise<UserConfig | null> {
  const row = await actionsRepository.findMcpUserConfig(ctx.db, serverId, userId);
  return row ? (JSON.parse(ctx.secrets.decrypt(row.config_enc)) as UserConfig) : null;
}

function validateCreate(input: McpServerCreateInput) {
  if (input.auth_type === 'OAUTH' || input.auth_type === 'PT_OAUTH') {
    if (input.auth_performer !== 'PER_USER')
      throw new AppError(
        'INVALID_INPUT',
        `auth_type ${input.auth_type} acts for each user: auth_performer must be PER_USER`,
      );
  }
  if (input.auth_type !== 'API_TOKEN' && (input.api_token || input.auth_template))
    throw new AppError('INVALID_INPUT', 'api_token and auth_template apply only to auth_type API_TOKEN');
  if (input.auth_type === 'API_TOKEN') {
    const template = input.auth_template ?? DEFAULT_TEMPLATE;
    if (Object.keys(template.headers).some((h) => h.toLowerCase() === 'host'))
      throw new AppError('INVALID_INPUT', 'auth_template cannot set the Host header');
    if (input.auth_performer === 'ADMIN') {
      if (!input.api_token)
        throw new AppError(
          'INVALID_INPUT',
          'A shared API key (api_token) is required with auth_performer ADMIN',
        );
      if (!Object.values(template.headers).some((v) => v.includes('{api_key}')))
        throw new AppError(
          'INVALID_INPUT',
          'auth_template must contain {api_key} somewhere in a header value',
        );
    } else {
      if (input.api_token)
        throw new AppError(
          'INVALID_INPUT',
          'With auth_performer PER_USER each user supplies their own key: leave api_token out',
        );
      if (placeholders(template).length === 0)
        throw new AppError(
          'INVALID_INPUT',
          'auth_template must name at least one {field} each user supplies',
        );
    }
  }
  if (input.auth_type === 'PT_OAUTH') return 'pt';
  return null;
}

export async function createMcpServer({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: McpServerCreateInput;
}) {
  const { actor } = ctx;
  if (validateCreate(input) === 'pt' && !ctx.config.KAS_OIDC_ISSUER)
    throw new AppError(
      'INVALID_INPUT',
      'OAuth pass-through forwards the caller’s OIDC sign-in token, but kas has no OIDC configured (KAS_OIDC_ISSUER)',
    );
  const scope = (await checkRequestedScope(ctx, actor, input.groups, null)) as Scope;
  const config: AdminConfig = {
    api_token: input.api_token,
    auth_template: input.auth_type === 'API_TOKEN' ? (input.auth_template ?? DEFAULT_TEMPLATE) : undefined,
    oauth_client_id: input.oauth_client_id,
    oauth_client_secret: input.oauth_client_secret,
  };
  const { id } = await actionsRepository.insertMcpServer(ctx.db, {
    name: input.name,
    description: input.description ?? '',
    server_url: input.server_url,
    transport: input.transport,
    auth_type: input.auth_type,
    auth_performer: input.auth_performer,
    admin_config_enc: ctx.secrets.encrypt(JSON.stringify(config)),
    owner_id: actor.user_id,
    group_scoped: scope.group_scoped,
  });
  await actionsRepository.replaceMcpServerGroups(ctx.db, id, scope.groups);
  return {
    server_id: id,
    server_name: input.name,
    server_url: input.server_url,
    auth_type: input.auth_type,
    auth_performer: input.auth_performer,
    no_user_authentication_required: input.auth_type === 'NONE' || input.auth_performer === 'ADMIN',
  };
}

/**
 * The server, when the actor manages it (admin, or curator of all its groups); 403 when they may only
 * use it, and 404 like an absent server when they may not even use it.
 */
async function managedServer(ctx: Deps, actor: Actor, id: number): Promise<McpServerRow> {
  const row = await serverOr404(ctx, id);
  await requireManage(ctx, actor, await scopeOfServer(ctx, row), `MCP server ${id}`, () =>
    serverNotFound(id),
  );
  return row;
}

async function snapshot(ctx: Deps, actor: Actor, row: McpServerRow): Promise<McpServerSnapshot> {
  const config = adminConfig(ctx, row);
  const scope = await scopeOfServer(ctx, row);
  const { n } = await actionsRepository.countServerTools(ctx.db, row.id);
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    server_url: row.server_url,
    transport: row.transport,
    auth_type: row.auth_type,
    auth_performer: row.auth_performer,
    status: row.status,
    required_fields: requiredFields(ctx, row),
    auth_template: config.auth_template ?? null,
    has_api_token: !!config.api_token,
    tool_count: Number(n),
    user_authenticated: 'headers' in (await mcpHeaders(ctx, actor, row)),
    last_refreshed_at: row.last_refreshed_at ? new Date(row.last_refreshed_at).toISOString() : null,
    groups: scope.groups,
  };
}

/** `manage`: the servers the actor manages (admin list); `use`: those the actor may use (their groups). */
export async function listMcpServers({
  ctx,
  purpose,
}: {
  ctx: Deps & { actor: Actor };
  purpose: 'manage' | 'use';
}) {
  const { actor } = ctx;
  const rows = await actionsRepository.listMcpServers(ctx.db);
  const who = await loadScope(ctx.db, actor);
  const visible: McpServerRow[] = [];
  for (const row of rows) {
    const scope = await scopeOfServer(ctx, row);
    if (purpose === 'manage' ? policy.manageAction(who, scope) : canUse(who, scope)) visible.push(row);
  }
  return { mcp_servers: await Promise.all(visible.map((r) => snapshot(ctx, actor, r))) };
}

export async function getMcpServer({ ctx, serverId }: { ctx: Deps & { actor: Actor }; serverId: number }) {
  const { actor } = ctx;
  return snapshot(ctx, actor, await managedServer(ctx, actor, serverId));
}

function reachFailure(row: McpServerRow, error: unknown): string {
  if (isAuthFailure(error)) return `The MCP server at ${row.server_url} refused the authentication`;
  if (error instanceof OutboundError)
    return `Could not reach the MCP server at ${row.server_url}: ${error.message}`;
  return `Could not reach the MCP server at ${row.server_url}: check the URL and the transport`;
}

/**
 * Lists the server's tools live (`tools/list`) with the caller's credentials and stores each as a tool
 * row (new ones enabled, vanished ones deleted, so they leave every agent). An empty list says why.
 */
export async function fetchMcpServerTools({
  ctx,
  serverId,
}: {
  ctx: Deps & { actor: Actor };
  serverId: number;
}): Promise<z.infer<typeof McpServerTools>> {
  const { actor } = ctx;
  const row = await managedServer(ctx, actor, serverId);
  const base = { server_id: row.id, server_name: row.name, server_url: row.server_url };
  const auth = await mcpHeaders(ctx, actor, row);
  if ('missing' in auth) return { ...base, tools: [], message: `No tools listed: ${auth.missing}` };
  let live: Awaited<ReturnType<typeof listMcpTools>>;
  try {
    live = await withAuthRetry(ctx, actor, row, auth.headers, (headers) =>
      withMcpClient(ctx.outbound, row, headers, ctx.config.KAS_ACTION_TIMEOUT_MS, (client) =>
        listMcpTools(client, ctx.config.KAS_ACTION_TIMEOUT_MS),
      ),
    );
  } catch (error) {
    ctx.logger.info({ err: error, mcp_server_id: row.id }, 'listing MCP tools failed');
    await actionsRepository.updateMcpServer(ctx.db, row.id, { status: 'DISCONNECTED' });
    return {
      ...base,
      tools: [],
      message: `${reachFailure(row, error)}. The URL or the authentication is wrong.`,
    };
  }
  const stored = await actionsRepository.listServerTools(ctx.db, row.id);
  const liveNames = new Set(live.map((t) => t.name));
  await actionsRepository.deleteToolsById(
    ctx.db,
    stored.filter((s) => !liveNames.has(s.name)).map((s) => s.id),
  );
  for (const tool of live) {
    const existing = stored.find((s) => s.name === tool.name);
    if (existing) await actionsRepository.updateServerTool(ctx.db, existing.id, tool);
    else await actionsRepository.insertServerTool(ctx.db, { mcp_server_id: row.id, ...tool });
  }
  await actionsRepository.updateMcpServer(ctx.db, row.id, {
    status: live.length ? 'CONNECTED' : 'DISCONNECTED',
    last_refreshed_at: new Date(),
  });
  const rows = await actionsRepository.listServerTools(ctx.db, row.id);
  return {
    ...base,
    tools: rows.map((r) => ({
      id: r.id,
      name: r.name,
      description: r.description,
      input_schema: r.mcp_input_schema ?? { type: 'object' },
      enabled: r.enabled,
    })),
    message: rows.length ? null : 'The server listed no tools: the URL or the authentication is wrong.',
  };
}

export async function updateMcpServer({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: z.infer<typeof McpServerUpdateInput>;
}) {
  const { actor } = ctx;
  const row = await managedServer(ctx, actor, input.server_id);
  const scope = await checkRequestedScope(ctx, actor, input.groups, await scopeOfServer(ctx, row));
  await actionsRepository.updateMcpServer(ctx.db, row.id, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(scope ? { group_scoped: scope.group_scoped } : {}),
  });
  if (scope) await actionsRepository.replaceMcpServerGroups(ctx.db, row.id, scope.groups);
  let updated = 0;
  if (input.selected_tools) {
    const stored = await actionsRepository.listServerTools(ctx.db, row.id);
    const unknown = input.selected_tools.filter((n) => !stored.some((s) => s.name === n));
    if (unknown.length)
      throw new AppError(
        'INVALID_INPUT',
        `Unknown tools of MCP server ${row.id}: ${unknown.join(', ')} (list them first)`,
      );
    await actionsRepository.setServerToolsEnabled(ctx.db, row.id, input.selected_tools);
    updated = stored.length;
  }
  return { server_id: row.id, server_name: input.name ?? row.name, updated_tools: updated };
}

export async function deleteMcpServer({ ctx, serverId }: { ctx: Deps & { actor: Actor }; serverId: number }) {
  const { actor } = ctx;
  await managedServer(ctx, actor, serverId);
  if (!(await actionsRepository.deleteMcpServer(ctx.db, serverId)))
    throw new AppError('MCP_SERVER_NOT_FOUND', `MCP server ${serverId} not found`);
  return { success: true as const };
}

/** Stores the caller's own key for a per-user API-key server, after trying it with `tools/list`. */
export async function saveUserCredentials({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: z.infer<typeof McpUserCredentialsInput>;
}): Promise<z.infer<typeof McpUserCredentialsResponse>> {
  const { actor } = ctx;
  const row = await usableServer(ctx, actor, input.server_id);
  if (row.auth_type !== 'API_TOKEN' || row.auth_performer !== 'PER_USER')
    throw new AppError(
      'INVALID_INPUT',
      `MCP server ${row.id} does not take per-user keys (auth ${row.auth_type}, ${row.auth_performer})`,
    );
  const fields = requiredFields(ctx, row);
  const missing = fields.filter((f) => !input.credentials[f]);
  if (missing.length) throw new AppError('INVALID_INPUT', `Missing credentials: ${missing.join(', ')}`);
  const extra = Object.keys(input.credentials).filter((k) => !fields.includes(k));
  if (extra.length)
    throw new AppError(
      'INVALID_INPUT',
      `Unexpected credentials: ${extra.join(', ')} (expected ${fields.join(', ')})`,
    );
  const headers = fill(adminConfig(ctx, row).auth_template ?? DEFAULT_TEMPLATE, {
    ...input.credentials,
    user_email: actor.email,
  }) as Record<string, string>;
  try {
    await withMcpClient(ctx.outbound, row, headers, ctx.config.KAS_ACTION_TIMEOUT_MS, (client) =>
      listMcpTools(client, ctx.config.KAS_ACTION_TIMEOUT_MS),
    );
  } catch (error) {
    return {
      success: false,
      message: `${reachFailure(row, error)}; the credentials were not saved`,
      server_id: row.id,
      server_name: row.name,
      authenticated: false,
      validation_tested: true,
    };
  }
  await actionsRepository.upsertMcpUserConfig(
    ctx.db,
    row.id,
    actor.user_id,
    ctx.secrets.encrypt(JSON.stringify({ credentials: input.credentials } satisfies UserConfig)),
  );
  return {
    success: true,
    message: 'Credentials saved',
    server_id: row.id,
    server_name: row.name,
    authenticated: true,
    validation_tested: true,
  };
}

export async function deleteUserCredentials({
  ctx,
  serverId,
}: {
  ctx: Deps & { actor: Actor };
  serverId: number;
}) {
  const { actor } = ctx;
  const row = await actionsRepository.findMcpServer(ctx.db, serverId);
  if (row && (await actionsRepository.deleteMcpUserConfig(ctx.db, serverId, actor.user_id)))
    return { success: true as const };
  // Nothing of one's own to forget: a server the caller may not use answers like an absent one.
  if (!row || !canUse(await loadScope(ctx.db, actor), await scopeOfServer(ctx, row)))
    throw serverNotFound(serverId);
  throw new AppError('NOT_FOUND', `You have no credentials stored for MCP server ${serverId}`);
}

/** Builds the agent's MCP tools for one turn; servers not connected or not authenticated are skipped with a note. */
export const mcpToolLoader: ToolKindLoader = {
  async load({ ctx, actor, rows, note }) {
    const byServer = new Map<number, ToolRow[]>();
    for (const r of rows)
      if (r.mcp_server_id !== null)
        byServer.set(r.mcp_server_id, [...(byServer.get(r.mcp_server_id) ?? []), r]);
    const tools: AgentTool[] = [];
    const who = await loadScope(ctx.db, actor);
    for (const [serverId, serverTools] of byServer) {
      const server = await actionsRepository.findMcpServer(ctx.db, serverId);
      if (!server) continue;
      const names = serverTools.map((t) => t.name).join(', ');
      if (!canUse(who, await scopeOfServer(ctx, server))) {
        note(
          `The tools ${names} of MCP server "${server.name}" are not available: the server is reserved to user groups this user is not in.`,
        );
        continue;
      }
      if (server.status !== 'CONNECTED') {
        note(
          `The tools ${names} of MCP server "${server.name}" are not available: the server is disconnected.`,
        );
        continue;
      }
      const auth = await mcpHeaders(ctx, actor, server);
      if ('missing' in auth) {
        note(`The tools ${names} of MCP server "${server.name}" are not available: ${auth.missing}.`);
        continue;
      }
      for (const t of serverTools)
        tools.push({
          tool_id: t.id,
          name: t.name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64),
          description: `${t.description} (MCP server "${server.name}")`.slice(0, 1024),
          parameters: t.mcp_input_schema ?? { type: 'object', properties: {} },
          call: async (args, signal) => {
            try {
              const result = await withAuthRetry(ctx, actor, server, auth.headers, (headers) =>
                withMcpClient(ctx.outbound, server, headers, ctx.config.KAS_ACTION_TIMEOUT_MS, (client) =>
                  client.callTool({ name: t.name, arguments: args }, undefined, {
                    signal,
                    timeout: ctx.config.KAS_ACTION_TIMEOUT_MS,
                  }),
                ),
              );
              const { data, isError } = mcpResultData(result as Record<string, unknown>);
              const type = typeof data === 'string' ? 'text' : 'json';
              return isError
                ? {
                    response_type: type,
                    data,
                    error: { is_auth_error: false, status_code: null, message: 'The tool reported an error' },
                  }
                : { response_type: type, data, error: null };
            } catch (error) {
              if (isAuthFailure(error)) return failure(reachFailure(server, error), 401, true);
              if (signal.aborted)
                return failure(`The tool did not answer within ${ctx.config.KAS_ACTION_TIMEOUT_MS} ms`, null);
              ctx.logger.warn({ err: error, tool_id: t.id }, 'an MCP tool call failed');
              return failure(reachFailure(server, error), null);
            }
          },
        });
    }
    return tools;
  },
};
