import type { Actor } from '../../auth/roles.ts';
import { type GroupScoped, loadScope, notCurated, policy, type Scope as Who } from '../../auth/scope.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import * as userGroupsRepository from '../../user-groups/user-groups.repository.ts';

type Deps = ServiceContext<'db'>;

/** An action's group scope: unscoped (everyone uses it, admins manage it) or the groups it is for. */
export interface Scope extends GroupScoped {
  groups: number[];
}

export { loadScope };

/**
 * 403 when the actor may use the action but not manage it; an action the actor may not even use
 * answers `notFound`, exactly like an absent one.
 */
export async function requireManage(
  ctx: Deps,
  actor: Actor,
  scope: Scope,
  what: string,
  notFound: () => AppError,
): Promise<void> {
  const who = await loadScope(ctx.db, actor);
  if (policy.manageAction(who, scope)) return;
  if (!policy.useAction(who, scope)) throw notFound();
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
  ctx: Deps,
  actor: Actor,
  groups: number[] | undefined,
  current: Scope | null,
): Promise<Scope | null> {
  if (groups === undefined) {
    if (current) return null;
    groups = [];
  }
  const unique = [...new Set(groups)];
  const existing = new Set(await userGroupsRepository.findExistingGroupIds(ctx.db, unique));
  const unknown = unique.filter((g) => !existing.has(g));
  if (unknown.length) throw new AppError('INVALID_INPUT', `Unknown user groups: ${unknown.join(', ')}`);
  const who = await loadScope(ctx.db, actor);
  if (!who.admin) {
    if (unique.length === 0)
      throw new AppError(
        'INVALID_INPUT',
        'A curator’s action is for the groups they curate: name at least one in `groups`',
      );
    const foreign = notCurated(who, unique);
    if (foreign.length)
      throw new AppError('INSUFFICIENT_PERMISSIONS', `You do not curate user groups ${foreign.join(', ')}`);
  }
  return { group_scoped: unique.length > 0, groups: unique };
}

/** Whether the actor may use a scoped action (`policy.useAction`: unscoped, admin, or a member of one of its groups). */
export function canUse(who: Who, scope: Scope): boolean {
  return policy.useAction(who, scope);
}
