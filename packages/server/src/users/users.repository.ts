import type { Role } from '../auth/roles.ts';
import type { DbExecutor } from '../db/database.ts';

export function insertUser(db: DbExecutor, row: { email: string; role: Role; account_type?: string }) {
  return db.insertInto('users').values(row).returning(['id', 'email', 'role']).executeTakeFirstOrThrow();
}

/** Callers must clear `ctx.authCache`: a role is part of the cached actor. */
export function updateUser(db: DbExecutor, id: string, patch: { email?: string; role?: Role }) {
  return db.updateTable('users').set(patch).where('id', '=', id).executeTakeFirst();
}

/** Callers must clear `ctx.authCache`: the deleted user's keys may be cached. */
export function deleteUser(db: DbExecutor, id: string) {
  return db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
}

export function findUser(db: DbExecutor, id: string) {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listUsers(db: DbExecutor) {
  return db
    .selectFrom('users')
    .select(['id', 'email', 'role', 'account_type'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The subset of `ids` that name existing users. */
export async function findExistingUserIds(db: DbExecutor, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('users').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}
