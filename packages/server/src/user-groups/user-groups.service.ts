import type { ActorContext, ServiceContext } from '../context.ts';
import type { DbExecutor } from '../db/database.ts';
import { AppError } from '../errors.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as userGroupsRepository from './user-groups.repository.ts';
import type {
  CreateUserGroupInput,
  SetCuratorInput,
  UpdateUserGroupInput,
  UserGroup,
} from './user-groups.schemas.ts';

type Deps = ServiceContext<'db'>;
type ActorDeps = ActorContext<'db'>;

function notFound(id: number): AppError {
  return new AppError('USER_GROUP_NOT_FOUND', `User group ${id} not found`);
}

/** The ids of `requested` that are not in `found`, each once, in request order. */
export function missingIds<T>(requested: readonly T[], found: readonly T[]): T[] {
  const known = new Set(found);
  return [...new Set(requested)].filter((id) => !known.has(id));
}

async function assertUsersExist(db: DbExecutor, userIds: readonly string[]): Promise<void> {
  const unknown = missingIds(userIds, await usersRepository.findExistingUserIds(db, userIds));
  if (unknown.length) throw new AppError('INVALID_INPUT', `Unknown users: ${unknown.join(', ')}`);
}

async function loadGroups(db: DbExecutor, groups: { id: number; name: string }[]): Promise<UserGroup[]> {
  const members = await userGroupsRepository.listMembers(
    db,
    groups.map((g) => g.id),
  );
  return groups.map((group) => {
    const own = members.filter((m) => m.group_id === group.id);
    return {
      id: group.id,
      name: group.name,
      users: own.map(({ id, email, role, account_type, is_active }) => ({
        id,
        email,
        role,
        account_type,
        is_active,
      })),
      curator_ids: own.filter((m) => m.is_curator).map((m) => m.id),
    };
  });
}

async function getGroup(db: DbExecutor, id: number): Promise<UserGroup> {
  const group = await userGroupsRepository.findGroup(db, id);
  if (!group) throw notFound(id);
  const [loaded] = await loadGroups(db, [group]);
  return loaded!;
}

/** Ids of the groups the user belongs to: what access checks on group-shared resources need. */
export async function groupIdsOfUser({ ctx, userId }: { ctx: Deps; userId: string }): Promise<number[]> {
  return userGroupsRepository.groupIdsOfUser(ctx.db, userId);
}

/** Admins see every group; curators see the groups they curate. */
export async function listUserGroups({ ctx }: { ctx: ActorDeps }): Promise<UserGroup[]> {
  const groups = await userGroupsRepository.listGroups(
    ctx.db,
    ctx.actor.role === 'admin' ? {} : { curatedBy: ctx.actor.user_id },
  );
  return loadGroups(ctx.db, groups);
}

export async function createUserGroup({
  ctx,
  input,
}: {
  ctx: Deps;
  input: CreateUserGroupInput;
}): Promise<UserGroup> {
  const id = await ctx.db.transaction().execute(async (trx) => {
    if (await userGroupsRepository.findGroupByName(trx, input.name)) {
      throw new AppError('DUPLICATE_RESOURCE', `A user group named '${input.name}' already exists`);
    }
    await assertUsersExist(trx, input.user_ids);
    const row = await userGroupsRepository.insertGroup(trx, input.name);
    await userGroupsRepository.replaceMembers(trx, row.id, [...new Set(input.user_ids)]);
    return row.id;
  });
  return getGroup(ctx.db, id);
}

/**
 * Admins may change any group; curators only the groups they curate, and they cannot remove a curator
 * (curator status is the admin's decision).
 */
export async function updateUserGroup({
  ctx,
  input,
}: {
  ctx: ActorDeps;
  input: UpdateUserGroupInput;
}): Promise<UserGroup> {
  const id = input.user_group_id;
  const isAdmin = ctx.actor.role === 'admin';
  await ctx.db.transaction().execute(async (trx) => {
    const group = await userGroupsRepository.findGroup(trx, id);
    if (!group) throw notFound(id);
    if (!isAdmin) {
      const membership = await userGroupsRepository.findMembership(trx, id, ctx.actor.user_id);
      if (!membership?.is_curator) {
        throw new AppError('INSUFFICIENT_PERMISSIONS', `You do not curate user group ${id}`);
      }
    }
    if (input.name !== undefined && input.name !== group.name) {
      if (await userGroupsRepository.findGroupByName(trx, input.name)) {
        throw new AppError('DUPLICATE_RESOURCE', `A user group named '${input.name}' already exists`);
      }
      await userGroupsRepository.updateGroupName(trx, id, input.name);
    }
    if (input.user_ids !== undefined) {
      const userIds = [...new Set(input.user_ids)];
      await assertUsersExist(trx, userIds);
      if (!isAdmin) {
        const [current] = await loadGroups(trx, [group]);
        const keep = new Set(userIds);
        const removedCurators = current!.curator_ids.filter((curatorId) => !keep.has(curatorId));
        if (removedCurators.length) {
          throw new AppError(
            'INSUFFICIENT_PERMISSIONS',
            `Only an admin can remove curators from a group: ${removedCurators.join(', ')}`,
          );
        }
      }
      await userGroupsRepository.replaceMembers(trx, id, userIds);
      await userGroupsRepository.touchGroup(trx, id);
    }
  });
  return getGroup(ctx.db, id);
}

/** Deleting a group removes its memberships and every grant made to it (agents, document sets). */
export async function deleteUserGroup({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  const deleted = await userGroupsRepository.deleteGroup(ctx.db, id);
  if (!deleted.numDeletedRows) throw notFound(id);
}

/**
 * Makes a member a curator of the group or not. As in the reference, a basic user who becomes a curator
 * gets the curator role, and a curator who no longer curates any group goes back to basic.
 */
export async function setCurator({
  ctx,
  input,
}: {
  ctx: Deps & { authCache?: { invalidate(): Promise<void> } | null };
  input: SetCuratorInput;
}): Promise<UserGroup> {
  const { user_group_id: id, user_id: userId, is_curator: isCurator } = input;
  await ctx.db.transaction().execute(async (trx) => {
    if (!(await userGroupsRepository.findGroup(trx, id))) throw notFound(id);
    const membership = await userGroupsRepository.findMembership(trx, id, userId);
    if (!membership) {
      throw new AppError('INVALID_INPUT', `User ${userId} is not a member of user group ${id}`);
    }
    await userGroupsRepository.setCurator(trx, id, userId, isCurator);
    const user = await usersRepository.findUser(trx, userId);
    if (!user) return;
    if (isCurator && user.role === 'basic') {
      await usersRepository.updateUser(trx, userId, { role: 'curator' });
    } else if (!isCurator && user.role === 'curator') {
      const curated = await userGroupsRepository.curatedGroupIdsOfUser(trx, userId);
      if (curated.length === 0) await usersRepository.updateUser(trx, userId, { role: 'basic' });
    }
  });
  // A role is part of the cached actor.
  await ctx.authCache?.invalidate();
  return getGroup(ctx.db, id);
}
