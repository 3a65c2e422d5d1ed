import type { Actor } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import { OutboundError } from '../outbound/outbound.ts';
import type { ToolRow } from './actions.repository.ts';
import * as actionsRepository from './actions.repository.ts';
import { buildRequest, type OpenApiMethod, parseOpenApi } from './openapi/openapi.ts';
import { decryptHeaders } from './service/custom-tools.ts';
import { userAccessToken } from './service/oauth-tokens.ts';
import { canUse, loadScope } from './service/scope.ts';

export type ToolRunnerCtx = ServiceContext<'db' | 'secrets' | 'outbound' | 'config' | 'logger'>;

/** What one call of an action returns: shown in `custom_tool_delta` and fed to the model. */
export interface ToolCallResult {
  response_type: 'json' | 'text';
  data: unknown;
  error: { is_auth_error: boolean; status_code: number | null; message: string } | null;
}

/** One function offered to the model, backed by an OpenAPI operation or an MCP tool. */
export interface AgentTool {
  tool_id: number;
  /** The function name the model calls (unique within the turn). */
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  call(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult>;
}

/** Builds one kind of tool (OpenAPI now, MCP in its own module) from its rows. */
export interface ToolKindLoader {
  load(args: {
    ctx: ToolRunnerCtx;
    actor: Actor;
    rows: ToolRow[];
    note(text: string): void;
  }): Promise<Array<Omit<AgentTool, 'name'> & { name: string }>>;
}

const RESERVED = new Set(['internal_search']);

/**
 * The actions an agent may call in this turn: those among its `tool_ids` that are enabled and whose
 * authentication resolves for this user. Tools that cannot run are left out with a note for the model.
 */
export async function loadAgentTools({
  ctx,
  actor,
  toolIds,
  loaders = {},
}: {
  ctx: ToolRunnerCtx;
  actor: Actor;
  toolIds: readonly number[];
  loaders?: Partial<Record<'mcp', ToolKindLoader>>;
}): Promise<{ tools: AgentTool[]; notes: string[] }> {
  const rows = (await actionsRepository.findEnabledTools(ctx.db, toolIds)).filter(
    (r) => r.kind !== 'builtin',
  );
  const notes: string[] = [];
  const note = (text: string) => notes.push(text);
  const loaded: AgentTool[] = [];
  const openapi = rows.filter((r) => r.kind === 'openapi');
  const scoped = openapi.filter((r) => r.group_scoped);
  const groups = await actionsRepository.groupsOfTools(
    ctx.db,
    scoped.map((r) => r.id),
  );
  const who = scoped.length ? await loadScope(ctx.db, actor) : null;
  for (const row of openapi) {
    const scope = {
      group_scoped: row.group_scoped,
      groups: groups.filter((g) => g.tool_id === row.id).map((g) => g.group_id),
    };
    if (who && !canUse(who, scope)) {
      note(`The action "${row.name}" is not available: it is reserved to user groups this user is not in.`);
      continue;
    }
    loaded.push(...(await openApiTools(ctx, actor, row, note)));
  }
  const mcpRows = rows.filter((r) => r.kind === 'mcp');
  if (mcpRows.length && loaders.mcp)
    loaded.push(...(await loaders.mcp.load({ ctx, actor, rows: mcpRows, note })));
  const taken = new Set(RESERVED);
  return {
    tools: loaded.map((tool) => {
      let name = tool.name;
      if (taken.has(name)) name = `${name}_${tool.tool_id}`.slice(0, 64);
      taken.add(name);
      return { ...tool, name };
    }),
    notes,
  };
}

async function openApiAuth(
  ctx: ToolRunnerCtx,
  actor: Actor,
  row: ToolRow,
  note: (text: string) => void,
): Promise<Record<string, string> | null> {
  const headers: Record<string, string> = {};
  for (const h of decryptHeaders(ctx, row.custom_headers_enc)) headers[h.key] = h.value;
  if (row.oauth_config_id !== null) {
    const token = await userAccessToken(ctx, row.oauth_config_id, actor.user_id);
    if (!token) {
      note(
        `The action "${row.name}" is not available: the user has not connected their account yet (OAuth, POST /api/oauth-config/initiate with oauth_config_id ${row.oauth_config_id}).`,
      );
      return null;
    }
    headers.Authorization = `Bearer ${token}`;
  } else if (row.passthrough_auth) {
    if (!actor.oidc_token) {
      note(
        `The action "${row.name}" is not available: it forwards the user's sign-in token, and this user did not sign in through OIDC.`,
      );
      return null;
    }
    headers.Authorization = `Bearer ${actor.oidc_token}`;
  }
  return headers;
}

async function openApiTools(
  ctx: ToolRunnerCtx,
  actor: Actor,
  row: ToolRow,
  note: (text: string) => void,
): Promise<AgentTool[]> {
  if (!row.openapi_schema) return [];
  const parsed = parseOpenApi(row.openapi_schema);
  const headers = await openApiAuth(ctx, actor, row, note);
  if (!headers) return [];
  return parsed.methods.map((method) => ({
    tool_id: row.id,
    name: method.name,
    description: `${method.summary} (${method.method} ${method.path}, action "${row.name}")`.slice(0, 1024),
    parameters: method.parameters,
    call: (args, signal) => callOperation(ctx, actor, row, parsed.serverUrl, method, headers, args, signal),
  }));
}

async function callOperation(
  ctx: ToolRunnerCtx,
  actor: Actor,
  row: ToolRow,
  serverUrl: string,
  method: OpenApiMethod,
  headers: Record<string, string>,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ToolCallResult> {
  let request: ReturnType<typeof buildRequest>;
  try {
    request = buildRequest(serverUrl, method, args);
  } catch (error) {
    return failure((error as Error).message, null);
  }
  const send = (h: Record<string, string>) =>
    ctx.outbound.fetch(request.url, {
      method: request.method,
      headers: {
        accept: 'application/json, text/plain;q=0.9, */*;q=0.5',
        ...h,
        ...(request.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(request.body !== undefined ? { body: request.body } : {}),
      signal,
      outbound: {
        timeoutMs: ctx.config.KAS_ACTION_TIMEOUT_MS,
        totalTimeoutMs: ctx.config.KAS_ACTION_TIMEOUT_MS,
        maxBytes: ctx.config.KAS_ACTION_MAX_RESPONSE_BYTES,
        retries: 0,
      },
    });
  try {
    let response = await send(headers);
    if (response.status === 401 && row.oauth_config_id !== null) {
      // The provider revoked or expired the token early: refresh once and retry.
      await response.body?.cancel();
      const token = await userAccessToken(ctx, row.oauth_config_id, actor.user_id, { force: true });
      if (token) response = await send({ ...headers, Authorization: `Bearer ${token}` });
    }
    const text = await response.text();
    const type = response.headers.get('content-type') ?? '';
    let data: unknown = text;
    let responseType: ToolCallResult['response_type'] = 'text';
    if (type.includes('json')) {
      try {
        data = JSON.parse(text);
        responseType = 'json';
      } catch {
        // Served as JSON but not JSON: passed on as text.
      }
    }
    if (!response.ok)
      return {
        response_type: responseType,
        data,
        error: {
          is_auth_error: response.status === 401 || response.status === 403,
          status_code: response.status,
          message: `The API answered HTTP ${response.status}`,
        },
      };
    return { response_type: responseType, data, error: null };
  } catch (error) {
    if (error instanceof OutboundError) {
      const message =
        error.code === 'TOO_LARGE'
          ? `The response exceeded ${ctx.config.KAS_ACTION_MAX_RESPONSE_BYTES} bytes`
          : error.code === 'TIMEOUT' || error.code === 'ABORTED'
            ? `The API did not answer within ${ctx.config.KAS_ACTION_TIMEOUT_MS} ms`
            : error.message;
      return failure(message, null);
    }
    if ((error as Error).name === 'AbortError' || (error as Error).name === 'TimeoutError')
      return failure(`The call was cut off after ${ctx.config.KAS_ACTION_TIMEOUT_MS} ms`, null);
    ctx.logger.warn({ err: error, tool_id: row.id }, 'an action call failed');
    return failure('The API could not be reached', null);
  }
}

export function failure(message: string, status: number | null, isAuth = false): ToolCallResult {
  return {
    response_type: 'text',
    data: null,
    error: { is_auth_error: isAuth, status_code: status, message },
  };
}

/** What the model reads for a call: the result or the error, as JSON text. */
export function resultForModel(result: ToolCallResult): string {
  return JSON.stringify(
    result.error
      ? { error: result.error.message, status_code: result.error.status_code, data: result.data ?? undefined }
      : result.data,
  );
}
