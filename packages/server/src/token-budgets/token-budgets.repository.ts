import type { DbExecutor } from '../db/database.ts';

const columns = ['id as token_id', 'scope', 'group_id', 'enabled', 'token_budget', 'period_hours'] as const;

export function listBudgets(
  db: DbExecutor,
  filter: { scope?: 'global' | 'user' | 'user_group'; group_id?: number },
) {
  let query = db.selectFrom('token_budgets').select(columns);
  if (filter.scope) query = query.where('scope', '=', filter.scope);
  if (filter.group_id !== undefined) query = query.where('group_id', '=', filter.group_id);
  return query.orderBy('id').execute();
}

export function findBudget(db: DbExecutor, id: number) {
  return db.selectFrom('token_budgets').select(columns).where('id', '=', id).executeTakeFirst();
}

export function insertBudget(
  db: DbExecutor,
  row: {
    scope: 'global' | 'user' | 'user_group';
    group_id: number | null;
    enabled: boolean;
    token_budget: number;
    period_hours: number;
  },
) {
  return db.insertInto('token_budgets').values(row).returning('id').executeTakeFirstOrThrow();
}

export function updateBudget(
  db: DbExecutor,
  id: number,
  patch: { enabled: boolean; token_budget: number; period_hours: number },
) {
  return db.updateTable('token_budgets').set(patch).where('id', '=', id).executeTakeFirst();
}

export function deleteBudget(db: DbExecutor, id: number) {
  return db.deleteFrom('token_budgets').where('id', '=', id).executeTakeFirst();
}

/** The enabled budgets that bind this user: global, per-user, and those of the user's groups. */
export function budgetsFor(db: DbExecutor, userId: string) {
  return db
    .selectFrom('token_budgets as b')
    .select(['b.id', 'b.scope', 'b.group_id', 'b.token_budget', 'b.period_hours'])
    .where('b.enabled', '=', true)
    .where((eb) =>
      eb.or([
        eb('b.scope', 'in', ['global', 'user']),
        eb(
          'b.group_id',
          'in',
          eb.selectFrom('user_group_members').select('group_id').where('user_id', '=', userId),
        ),
      ]),
    )
    .execute();
}

/** Tokens used since `since` by everyone, one user, or a group's members; with the oldest counted message. */
export function usageSince(
  db: DbExecutor,
  scope: { kind: 'global' } | { kind: 'user'; user_id: string } | { kind: 'user_group'; group_id: number },
  since: Date,
) {
  let query = db
    .selectFrom('chat_messages as m')
    .innerJoin('chat_sessions as s', 's.id', 'm.chat_session_id')
    .select((eb) => [
      eb
        .cast<number>(eb.fn.coalesce(eb.fn.sum<number | null>('m.token_count'), eb.lit(0)), 'integer')
        .as('used'),
      eb.fn.min<Date | null>('m.time_sent').as('oldest'),
    ])
    .where('m.time_sent', '>', since);
  if (scope.kind === 'user') query = query.where('s.user_id', '=', scope.user_id);
  if (scope.kind === 'user_group')
    query = query.where(
      's.user_id',
      'in',
      db.selectFrom('user_group_members').select('user_id').where('group_id', '=', scope.group_id),
    );
  return query.executeTakeFirstOrThrow();
}

/** Locks the budgets' rows (in id order, so two callers never wait on each other crosswise) until commit. */
export function lockBudgets(db: DbExecutor, ids: number[]) {
  return db
    .selectFrom('token_budgets')
    .select('id')
    .where('id', 'in', ids)
    .orderBy('id')
    .forUpdate()
    .execute();
}

/** Tokens reserved since `since` by turns being answered: everyone's, one user's, or a group's members'. */
export async function reservedSince(
  db: DbExecutor,
  scope: { kind: 'global' } | { kind: 'user'; user_id: string } | { kind: 'user_group'; group_id: number },
  since: Date,
): Promise<number> {
  let query = db
    .selectFrom('token_budget_reservations as r')
    .select((eb) =>
      eb
        .cast<number>(eb.fn.coalesce(eb.fn.sum<number | null>('r.tokens'), eb.lit(0)), 'integer')
        .as('reserved'),
    )
    .where('r.created_at', '>', since);
  if (scope.kind === 'user') query = query.where('r.user_id', '=', scope.user_id);
  if (scope.kind === 'user_group')
    query = query.where(
      'r.user_id',
      'in',
      db.selectFrom('user_group_members').select('user_id').where('group_id', '=', scope.group_id),
    );
  return (await query.executeTakeFirstOrThrow()).reserved;
}

export function insertReservation(db: DbExecutor, row: { user_id: string; tokens: number }) {
  return db.insertInto('token_budget_reservations').values(row).returning('id').executeTakeFirstOrThrow();
}

export function deleteReservation(db: DbExecutor, id: number) {
  return db.deleteFrom('token_budget_reservations').where('id', '=', id).execute();
}

/** Reservations left behind by a process that stopped mid-answer. */
export function deleteReservationsBefore(db: DbExecutor, before: Date) {
  return db.deleteFrom('token_budget_reservations').where('created_at', '<', before).execute();
}
