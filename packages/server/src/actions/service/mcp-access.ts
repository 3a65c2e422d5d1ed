import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { McpServerRow } from '../actions.repository.ts';
import * as actionsRepository from '../actions.repository.ts';
import { canUse, loadScope, type Scope } from './scope.ts';

type Deps = ServiceContext<'db'>;

export function serverNotFound(id: number): AppError {
  return new AppError('MCP_SERVER_NOT_FOUND', `MCP server ${id} not found`);
}

export async function serverOr404(ctx: Deps, id: number): Promise<McpServerRow> {
  const row = await actionsRepository.findMcpServer(ctx.db, id);
  if (!row) throw serverNotFound(id);
  return row;
}

export async function scopeOfServer(ctx: Deps, row: McpServerRow): Promise<Scope> {
  const groups = await actionsRepository.groupsOfMcpServers(ctx.db, [row.id]);
  return { group_scoped: row.group_scoped, groups: groups.map((g) => g.group_id) };
}

/** The server, when the actor may use it (not scoped, or a member of one of its groups); 404 otherwise. */
export async function usableServer(ctx: Deps, actor: Actor, id: number): Promise<McpServerRow> {
  const row = await serverOr404(ctx, id);
  if (!canUse(await loadScope(ctx.db, actor), await scopeOfServer(ctx, row))) throw serverNotFound(id);
  return row;
}
