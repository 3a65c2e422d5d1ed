import type { Role } from '../auth/roles.ts';
import type { DbExecutor } from '../db/database.ts';

const snapshotColumns = ['id', 'email', 'role', 'account_type', 'is_active'] as const;

export function insertUser(db: DbExecutor, row: { email: string; role: Role; account_type?: string }) {
  return db.insertInto('users').values(row).returning(['id', 'email', 'role']).executeTakeFirstOrThrow();
}

/** Callers must clear `ctx.authCache`: role and active flag are part of the cached actor. */
export function updateUser(
  db: DbExecutor,
  id: string,
  patch: { email?: string; role?: Role; is_active?: boolean },
) {
  return db.updateTable('users').set(patch).where('id', '=', id).executeTakeFirst();
}

/** Callers must clear `ctx.authCache`: the deleted user's keys may be cached. */
export function deleteUser(db: DbExecutor, id: string) {
  return db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
}

export function findUser(db: DbExecutor, id: string) {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserByEmail(db: DbExecutor, email: string) {
  return db
    .selectFrom('users')
    .select(snapshotColumns)
    .where((eb) => eb(eb.fn('lower', ['email']), '=', eb.fn('lower', [eb.val(email)])))
    .executeTakeFirst();
}

export function listUsers(db: DbExecutor) {
  return db.selectFrom('users').select(snapshotColumns).orderBy('created_at').orderBy('id').execute();
}

/** One page of users, optionally those whose email contains `q` (case-insensitive). */
export async function pageUsers(
  db: DbExecutor,
  args: { q?: string | undefined; offset: number; limit: number },
) {
  let query = db.selectFrom('users');
  const { q } = args;
  if (q)
    query = query.where((eb) =>
      eb(eb.fn('strpos', [eb.fn('lower', ['email']), eb.fn('lower', [eb.val(q)])]), '>', eb.lit(0)),
    );
  const [items, total] = await Promise.all([
    query
      .select(snapshotColumns)
      .orderBy('email')
      .orderBy('id')
      .offset(args.offset)
      .limit(args.limit)
      .execute(),
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { items, total_items: Number(total.n) };
}

/** The user's agents that nobody else can see: deleted with the user (shared ones stay). */
export async function deletePrivatePersonasOf(db: DbExecutor, userId: string): Promise<void> {
  await db
    .deleteFrom('personas as p')
    .where('p.owner_id', '=', userId)
    .where((eb) => eb.not(eb.ref('p.is_public')))
    .where(({ not, exists, selectFrom, lit }) =>
      not(
        exists(
          selectFrom('persona_users as u')
            .select(lit(1).as('one'))
            .whereRef('u.persona_id', '=', 'p.id')
            .where('u.user_id', '<>', userId),
        ),
      ),
    )
    .where(({ not, exists, selectFrom, lit }) =>
      not(
        exists(
          selectFrom('persona_groups as g').select(lit(1).as('one')).whereRef('g.persona_id', '=', 'p.id'),
        ),
      ),
    )
    .execute();
}

/** The subset of `ids` that name existing users. */
export async function findExistingUserIds(db: DbExecutor, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('users').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}
