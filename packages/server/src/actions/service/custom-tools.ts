import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { ToolRow } from '../actions.repository.ts';
import * as actionsRepository from '../actions.repository.ts';
import type {
  CustomToolCreateInput,
  CustomToolUpdateInput,
  HeaderPair,
  MethodSpec,
  ToolDetail,
} from '../actions.schemas.ts';
import { parseOpenApi } from '../openapi/openapi.ts';
import { canUse, checkRequestedScope, loadScope, requireManage, type Scope } from './scope.ts';

export const MASK = '********';

type Deps = ServiceContext<'db' | 'secrets' | 'config'>;

export function decryptHeaders(ctx: Pick<Deps, 'secrets'>, enc: string | null): HeaderPair[] {
  if (!enc) return [];
  return JSON.parse(ctx.secrets.decrypt(enc)) as HeaderPair[];
}

function methodsOf(row: ToolRow): MethodSpec[] {
  if (row.kind !== 'openapi' || !row.openapi_schema) return [];
  return parseOpenApi(row.openapi_schema).methods.map(({ method, path, summary, name }) => ({
    method,
    path,
    summary,
    name,
  }));
}

export function toToolDetail(ctx: Pick<Deps, 'secrets'>, row: ToolRow, groups: number[]): ToolDetail {
  return {
    id: row.id,
    name: row.name,
    display_name: row.display_name,
    description: row.description,
    kind: row.kind,
    in_code_tool_id: row.in_code_tool_id,
    mcp_server_id: row.mcp_server_id,
    enabled: row.enabled,
    definition: row.openapi_schema,
    custom_headers: decryptHeaders(ctx, row.custom_headers_enc).map((h) => ({ key: h.key, value: MASK })),
    passthrough_auth: row.passthrough_auth,
    oauth_config_id: row.oauth_config_id,
    methods: methodsOf(row),
    groups,
  };
}

/** The rules on how an action authenticates; each refusal is a 400 saying why. */
async function checkAuth(
  ctx: Deps,
  auth: { headers: HeaderPair[]; passthrough: boolean; oauthConfigId: number | null },
): Promise<void> {
  if (auth.passthrough) {
    if (!ctx.config.KAS_OIDC_ISSUER)
      throw new AppError(
        'INVALID_INPUT',
        'OAuth pass-through forwards the caller’s OIDC sign-in token, but kas has no OIDC configured (KAS_OIDC_ISSUER)',
      );
    if (auth.headers.some((h) => h.key.toLowerCase() === 'authorization'))
      throw new AppError(
        'INVALID_INPUT',
        'OAuth pass-through cannot be combined with a custom Authorization header: remove one of them',
      );
    if (auth.oauthConfigId !== null)
      throw new AppError(
        'INVALID_INPUT',
        'Choose either OAuth pass-through or an OAuth configuration, not both',
      );
  }
  if (auth.oauthConfigId !== null && !(await actionsRepository.oauthConfigExists(ctx.db, auth.oauthConfigId)))
    throw new AppError('INVALID_INPUT', `OAuth configuration ${auth.oauthConfigId} does not exist`);
}

function checkDuplicateHeaders(headers: HeaderPair[]) {
  const seen = new Set<string>();
  for (const h of headers) {
    const k = h.key.toLowerCase();
    if (seen.has(k)) throw new AppError('INVALID_INPUT', `Header ${h.key} is given twice`);
    seen.add(k);
  }
}

export function validateDefinition({ input }: { input: { definition: unknown } }): { methods: MethodSpec[] } {
  return {
    methods: parseOpenApi(input.definition).methods.map(({ method, path, summary, name }) => ({
      method,
      path,
      summary,
      name,
    })),
  };
}

export async function createCustomTool({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CustomToolCreateInput;
}): Promise<ToolDetail> {
  const { actor } = ctx;
  const parsed = parseOpenApi(input.definition);
  const headers = input.custom_headers ?? [];
  checkDuplicateHeaders(headers);
  if (headers.some((h) => h.value === MASK))
    throw new AppError('INVALID_INPUT', `A new action's header value cannot be the mask ${MASK}`);
  await checkAuth(ctx, {
    headers,
    passthrough: input.passthrough_auth,
    oauthConfigId: input.oauth_config_id ?? null,
  });
  const scope = (await checkRequestedScope(ctx, actor, input.groups, null)) as Scope;
  const name = input.name ?? parsed.title.trim();
  const id = await actionsRepository.insertTool(ctx.db, {
    group_scoped: scope.group_scoped,
    name,
    display_name: name,
    description: input.description ?? parsed.description,
    kind: 'openapi',
    in_code_tool_id: null,
    openapi_schema: JSON.stringify(parsed.spec),
    custom_headers_enc: headers.length ? ctx.secrets.encrypt(JSON.stringify(headers)) : null,
    passthrough_auth: input.passthrough_auth,
    oauth_config_id: input.oauth_config_id ?? null,
    user_id: actor.user_id,
    mcp_server_id: null,
  });
  await actionsRepository.replaceToolGroups(ctx.db, id, scope.groups);
  return detailOf(ctx, id);
}

function toolNotFound(id: number): AppError {
  return new AppError('TOOL_NOT_FOUND', `Tool ${id} not found`);
}

async function scopeOfTool(ctx: Pick<Deps, 'db'>, row: ToolRow): Promise<Scope> {
  const groups = await actionsRepository.groupsOfTools(ctx.db, [row.id]);
  return { group_scoped: row.group_scoped, groups: groups.map((g) => g.group_id) };
}

/** Who may use a tool: an MCP server's tools are scoped like their server, other tools by their own groups. */
async function usageScopeOfTool(ctx: Pick<Deps, 'db'>, row: ToolRow): Promise<Scope> {
  if (row.mcp_server_id === null) return scopeOfTool(ctx, row);
  const server = await actionsRepository.findMcpServer(ctx.db, row.mcp_server_id);
  const groups = await actionsRepository.groupsOfMcpServers(ctx.db, [row.mcp_server_id]);
  return { group_scoped: server?.group_scoped ?? true, groups: groups.map((g) => g.group_id) };
}

async function editableTool(ctx: Deps, actor: Actor, toolId: number): Promise<ToolRow> {
  const row = await actionsRepository.findTool(ctx.db, toolId);
  if (!row) throw toolNotFound(toolId);
  if (row.kind === 'builtin')
    throw new AppError('INVALID_INPUT', `Tool ${toolId} is built in and cannot be modified`);
  if (row.kind === 'mcp')
    throw new AppError(
      'INVALID_INPUT',
      `Tool ${toolId} comes from MCP server ${row.mcp_server_id}: manage it through /api/admin/mcp/*`,
    );
  await requireManage(ctx, actor, await scopeOfTool(ctx, row), `action ${toolId}`, () =>
    toolNotFound(toolId),
  );
  return row;
}

/**
 * Header values are bound to the origin (scheme, host, port) of the server they were entered for:
 * a definition that moves the action to another origin must give every value again, not the mask,
 * or the stored secrets would be sent to a server chosen by someone who cannot read them.
 */
function checkHeaderOrigin(
  row: ToolRow,
  parsed: ReturnType<typeof parseOpenApi> | null,
  given: HeaderPair[] | undefined,
) {
  if (!parsed || !row.openapi_schema) return;
  const from = new URL(parseOpenApi(row.openapi_schema).serverUrl).origin;
  const to = new URL(parsed.serverUrl).origin;
  if (from === to) return;
  // Without custom_headers every stored value is kept; with them, those sent back masked are.
  const kept = given ? given.filter((h) => h.value === MASK).map((h) => h.key) : null;
  if (kept && kept.length === 0) return;
  throw new AppError(
    'SECRET_REENTRY_REQUIRED',
    `definition.servers[0].url moves action ${row.id} from ${from} to ${to}, but the values of its custom_headers ` +
      `were entered for ${from}: give ${kept ? kept.join(', ') : 'every header'} again in custom_headers (the value, not the mask) with this change`,
  );
}

export async function updateCustomTool({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CustomToolUpdateInput;
}): Promise<ToolDetail> {
  const { actor } = ctx;
  const row = await editableTool(ctx, actor, input.tool_id);
  const scope = await checkRequestedScope(ctx, actor, input.groups, await scopeOfTool(ctx, row));
  const parsed = input.definition !== undefined ? parseOpenApi(input.definition) : null;
  const stored = decryptHeaders(ctx, row.custom_headers_enc);
  if (stored.length) checkHeaderOrigin(row, parsed, input.custom_headers);
  let headers = stored;
  if (input.custom_headers) {
    checkDuplicateHeaders(input.custom_headers);
    headers = input.custom_headers.map((h) => {
      if (h.value !== MASK) return h;
      const previous = stored.find((s) => s.key.toLowerCase() === h.key.toLowerCase());
      if (!previous)
        throw new AppError('INVALID_INPUT', `Header ${h.key} is new: give its value, not the mask`);
      return { key: h.key, value: previous.value };
    });
  }
  const passthrough = input.passthrough_auth ?? row.passthrough_auth;
  const oauthConfigId = input.oauth_config_id !== undefined ? input.oauth_config_id : row.oauth_config_id;
  await checkAuth(ctx, { headers, passthrough, oauthConfigId });
  const name = input.name;
  await actionsRepository.updateTool(ctx.db, row.id, {
    ...(name !== undefined ? { name, display_name: name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(parsed ? { openapi_schema: JSON.stringify(parsed.spec) } : {}),
    ...(input.custom_headers
      ? { custom_headers_enc: headers.length ? ctx.secrets.encrypt(JSON.stringify(headers)) : null }
      : {}),
    passthrough_auth: passthrough,
    oauth_config_id: oauthConfigId,
    ...(scope ? { group_scoped: scope.group_scoped } : {}),
  });
  if (scope) await actionsRepository.replaceToolGroups(ctx.db, row.id, scope.groups);
  return detailOf(ctx, row.id);
}

/** Deletes an OpenAPI action; the agents that had it lose it (their `tool_ids` cascade). */
export async function deleteCustomTool({ ctx, toolId }: { ctx: Deps & { actor: Actor }; toolId: number }) {
  const { actor } = ctx;
  const row = await editableTool(ctx, actor, toolId);
  await actionsRepository.deleteTool(ctx.db, row.id);
  return { success: true as const };
}

/**
 * A tool with its action configuration, for those who may use it (`policy.useAction`); a tool of an
 * action scoped to groups the caller is not in answers exactly like an absent one.
 */
export async function getTool({
  ctx,
  toolId,
}: {
  ctx: Pick<Deps, 'db' | 'secrets'> & { actor: Actor };
  toolId: number;
}) {
  const { actor } = ctx;
  const row = await actionsRepository.findTool(ctx.db, toolId);
  if (!row || !canUse(await loadScope(ctx.db, actor), await usageScopeOfTool(ctx, row)))
    throw toolNotFound(toolId);
  return toolDetail(ctx, row);
}

/** The tool's detail after a change by someone who manages it. */
async function detailOf(ctx: Pick<Deps, 'db' | 'secrets'>, toolId: number) {
  const row = await actionsRepository.findTool(ctx.db, toolId);
  if (!row) throw toolNotFound(toolId);
  return toolDetail(ctx, row);
}

async function toolDetail(ctx: Pick<Deps, 'db' | 'secrets'>, row: ToolRow) {
  const groups = await actionsRepository.groupsOfTools(ctx.db, [row.id]);
  return toToolDetail(
    ctx,
    row,
    groups.map((g) => g.group_id),
  );
}
