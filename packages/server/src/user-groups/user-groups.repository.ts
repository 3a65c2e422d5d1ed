import type { DbExecutor } from '../db/database.ts';

export function listGroups(db: DbExecutor, options: { curatedBy?: string } = {}) {
  let query = db.selectFrom('user_groups').select(['user_groups.id', 'user_groups.name']);
  if (options.curatedBy !== undefined) {
    const curatedBy = options.curatedBy;
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('user_group_members as m')
          .select('m.group_id')
          .whereRef('m.group_id', '=', 'user_groups.id')
          .where('m.user_id', '=', curatedBy)
          .where('m.is_curator', '=', true),
      ),
    );
  }
  return query.orderBy('user_groups.id').execute();
}

export function findGroup(db: DbExecutor, id: number) {
  return db.selectFrom('user_groups').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
}

export function findGroupByName(db: DbExecutor, name: string) {
  return db.selectFrom('user_groups').select(['id', 'name']).where('name', '=', name).executeTakeFirst();
}

export async function listMembers(db: DbExecutor, groupIds: readonly number[]) {
  if (groupIds.length === 0) return [];
  return db
    .selectFrom('user_group_members as m')
    .innerJoin('users', 'users.id', 'm.user_id')
    .select([
      'm.group_id',
      'm.is_curator',
      'users.id',
      'users.email',
      'users.role',
      'users.account_type',
      'users.is_active',
    ])
    .where('m.group_id', 'in', groupIds)
    .orderBy('users.created_at')
    .orderBy('users.id')
    .execute();
}

export function insertGroup(db: DbExecutor, name: string) {
  return db.insertInto('user_groups').values({ name }).returning('id').executeTakeFirstOrThrow();
}

export function updateGroupName(db: DbExecutor, id: number, name: string) {
  return db
    .updateTable('user_groups')
    .set({ name, updated_at: new Date() })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function touchGroup(db: DbExecutor, id: number) {
  return db
    .updateTable('user_groups')
    .set({ updated_at: new Date() })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function deleteGroup(db: DbExecutor, id: number) {
  return db.deleteFrom('user_groups').where('id', '=', id).executeTakeFirst();
}

/** Makes the member list exactly `userIds`; members who stay keep their curator flag. */
export async function replaceMembers(db: DbExecutor, groupId: number, userIds: readonly string[]) {
  let removal = db.deleteFrom('user_group_members').where('group_id', '=', groupId);
  if (userIds.length > 0) removal = removal.where('user_id', 'not in', userIds);
  await removal.execute();
  if (userIds.length === 0) return;
  await db
    .insertInto('user_group_members')
    .values(userIds.map((user_id) => ({ group_id: groupId, user_id })))
    .onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing())
    .execute();
}

export function findMembership(db: DbExecutor, groupId: number, userId: string) {
  return db
    .selectFrom('user_group_members')
    .select(['group_id', 'user_id', 'is_curator'])
    .where('group_id', '=', groupId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export function setCurator(db: DbExecutor, groupId: number, userId: string, isCurator: boolean) {
  return db
    .updateTable('user_group_members')
    .set({ is_curator: isCurator })
    .where('group_id', '=', groupId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** Ids of the groups `userId` belongs to (as member or curator). */
export async function groupIdsOfUser(db: DbExecutor, userId: string): Promise<number[]> {
  const rows = await db
    .selectFrom('user_group_members')
    .select('group_id')
    .where('user_id', '=', userId)
    .orderBy('group_id')
    .execute();
  return rows.map((r) => r.group_id);
}

/** Ids of the groups `userId` curates. */
export async function curatedGroupIdsOfUser(db: DbExecutor, userId: string): Promise<number[]> {
  const rows = await db
    .selectFrom('user_group_members')
    .select('group_id')
    .where('user_id', '=', userId)
    .where('is_curator', '=', true)
    .orderBy('group_id')
    .execute();
  return rows.map((r) => r.group_id);
}

/** The subset of `ids` that name existing groups. */
export async function findExistingGroupIds(db: DbExecutor, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('user_groups').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}
