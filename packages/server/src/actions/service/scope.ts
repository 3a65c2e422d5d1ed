import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import type { DbExecutor } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import * as userGroupsRepository from '../../user-groups/user-groups.repository.ts';
import * as actionsRepository from '../actions.repository.ts';

type Ctx = ServiceContext<'db'>;

/** An action's group scope: unscoped (everyone uses it, admins manage it) or the groups it is for. */
export interface Scope {
  group_scoped: boolean;
  groups: number[];
}

/**
 * Whether the actor manages an action (edit, delete, list an MCP server's tools): admins always;
 * curators when the action is scoped to groups and they curate every one of them (as for agents).
 */
export async function canManage(db: DbExecutor, actor: Actor, scope: Scope): Promise<boolean> {
  if (actor.role === 'admin') return true;
  if (actor.role !== 'curator' || !scope.group_scoped || scope.groups.length === 0) return false;
  const curated = new Set(await userGroupsRepository.curatedGroupIdsOfUser(db, actor.user_id));
  return scope.groups.every((g) => curated.has(g));
}

export async function requireManage(ctx: Ctx, actor: Actor, scope: Scope, what: string): Promise<void> {
  if (!(await canManage(ctx.db, actor, scope)))
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      `Only an admin or a curator of all of its groups can manage ${what}`,
    );
}

/**
 * The scope a create or update asks for, checked: unknown groups are a 400; a curator must name at
 * least one group and only groups they curate (403 otherwise). `undefined` keeps `current`.
 */
export async function checkRequestedScope(
  ctx: Ctx,
  actor: Actor,
  groups: number[] | undefined,
  current: Scope | null,
): Promise<Scope | null> {
  if (groups === undefined) {
    if (current) return null;
    groups = [];
  }
  const unique = [...new Set(groups)];
  const existing = new Set(await actionsRepository.existingGroupIds(ctx.db, unique));
  const unknown = unique.filter((g) => !existing.has(g));
  if (unknown.length) throw new AppError('INVALID_INPUT', `Unknown user groups: ${unknown.join(', ')}`);
  if (actor.role !== 'admin') {
    if (unique.length === 0)
      throw new AppError(
        'INVALID_INPUT',
        'A curator’s action is for the groups they curate: name at least one in `groups`',
      );
    const curated = new Set(await userGroupsRepository.curatedGroupIdsOfUser(ctx.db, actor.user_id));
    const foreign = unique.filter((g) => !curated.has(g));
    if (foreign.length)
      throw new AppError('INSUFFICIENT_PERMISSIONS', `You do not curate user groups ${foreign.join(', ')}`);
  }
  return { group_scoped: unique.length > 0, groups: unique };
}

/** Whether the actor may use a scoped action: admins and members of one of its groups. */
export function canUse(actor: Actor, memberOf: ReadonlySet<number>, scope: Scope): boolean {
  return !scope.group_scoped || actor.role === 'admin' || scope.groups.some((g) => memberOf.has(g));
}

export async function memberGroups(db: DbExecutor, actor: Actor): Promise<Set<number>> {
  return new Set(await userGroupsRepository.groupIdsOfUser(db, actor.user_id));
}
