import type { Actor } from '../auth/roles.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../errors.ts';
import * as userGroupsRepository from '../user-groups/user-groups.repository.ts';
import * as tokenBudgetsRepository from './token-budgets.repository.ts';
import type { TokenBudget, TokenBudgetArgs } from './token-budgets.schemas.ts';

type Deps = ServiceContext<'db'>;
const HOUR = 3_600_000;

function notFound(id: number) {
  return new AppError('NOT_FOUND', `Token budget ${id} not found`);
}

export async function listBudgets({
  ctx,
  scope,
  groupId,
}: {
  ctx: Deps;
  scope?: TokenBudget['scope'];
  groupId?: number;
}): Promise<TokenBudget[]> {
  return tokenBudgetsRepository.listBudgets(ctx.db, { scope, group_id: groupId });
}

export async function createBudget({
  ctx,
  scope,
  groupId = null,
  input,
}: {
  ctx: Deps;
  scope: TokenBudget['scope'];
  groupId?: number | null;
  input: TokenBudgetArgs;
}): Promise<TokenBudget> {
  if (groupId !== null) {
    const exists = await userGroupsRepository.findExistingGroupIds(ctx.db, [groupId]);
    if (!exists.length) throw new AppError('USER_GROUP_NOT_FOUND', `User group ${groupId} not found`);
  }
  const { id } = await tokenBudgetsRepository.insertBudget(ctx.db, { scope, group_id: groupId, ...input });
  return (await tokenBudgetsRepository.findBudget(ctx.db, id))!;
}

export async function updateBudget({
  ctx,
  id,
  input,
}: {
  ctx: Deps;
  id: number;
  input: TokenBudgetArgs;
}): Promise<TokenBudget> {
  const result = await tokenBudgetsRepository.updateBudget(ctx.db, id, input);
  if (!result.numUpdatedRows) throw notFound(id);
  return (await tokenBudgetsRepository.findBudget(ctx.db, id))!;
}

export async function deleteBudget({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  const result = await tokenBudgetsRepository.deleteBudget(ctx.db, id);
  if (!result.numDeletedRows) throw notFound(id);
}

const SCOPE_TEXT = { global: 'organization', user: 'user', user_group: "user's group" } as const;

/** How long a reservation counts: one left by a process that stopped mid-answer is forgotten after it. */
const RESERVATION_TTL = HOUR;

/** A turn's hold on the budgets binding its user; `release` once its answer's tokens are saved (or it failed). */
export interface BudgetReservation {
  release(): Promise<void>;
}

const NO_RESERVATION: BudgetReservation = { release: async () => {} };

/**
 * 429 before any generation when a budget binding the caller is used up: the tokens of all chat messages in
 * the budget's period, plus the tokens reserved by turns still being answered, reach `token_budget` thousand.
 * Otherwise the turn reserves `estimate` tokens until it is settled. The budgets' rows are locked while
 * counting and reserving, so concurrent questions (in any process) are admitted one after the other and each
 * sees the others' reservations. `Retry-After` is when the oldest counted message leaves the window.
 */
export async function reserveBudget({
  ctx,
  actor,
  estimate,
}: {
  ctx: Deps;
  actor: Actor;
  estimate: number;
}): Promise<BudgetReservation> {
  const budgets = await tokenBudgetsRepository.budgetsFor(ctx.db, actor.user_id);
  if (!budgets.length) return NO_RESERVATION;
  const id = await ctx.db.transaction().execute(async (trx) => {
    await tokenBudgetsRepository.lockBudgets(
      trx,
      budgets.map((b) => b.id),
    );
    const now = Date.now();
    const stale = new Date(now - RESERVATION_TTL);
    for (const budget of budgets) {
      const since = new Date(now - budget.period_hours * HOUR);
      const scope =
        budget.scope === 'global'
          ? ({ kind: 'global' } as const)
          : budget.scope === 'user'
            ? ({ kind: 'user', user_id: actor.user_id } as const)
            : ({ kind: 'user_group', group_id: budget.group_id! } as const);
      const usage = await tokenBudgetsRepository.usageSince(trx, scope, since);
      const reserved = await tokenBudgetsRepository.reservedSince(
        trx,
        scope,
        new Date(Math.max(since.getTime(), stale.getTime())),
      );
      const limit = budget.token_budget * 1000;
      if (usage.used + reserved >= limit) {
        const oldest = usage.oldest ? new Date(usage.oldest).getTime() : now;
        const retryAfter = Math.max(1, Math.ceil((oldest + budget.period_hours * HOUR - now) / 1000));
        const pending = reserved ? ` (${reserved} of them reserved by answers in progress)` : '';
        throw new AppError(
          'RATE_LIMITED',
          `Token budget exceeded for ${SCOPE_TEXT[budget.scope]}: ${usage.used + reserved} of ${limit} tokens used${pending} in ${budget.period_hours} h. Try again later.`,
          { headers: { 'Retry-After': String(retryAfter) } },
        );
      }
    }
    await tokenBudgetsRepository.deleteReservationsBefore(trx, stale);
    return (
      await tokenBudgetsRepository.insertReservation(trx, {
        user_id: actor.user_id,
        tokens: Math.max(1, Math.ceil(estimate)),
      })
    ).id;
  });
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      await tokenBudgetsRepository.deleteReservation(ctx.db, id);
    },
  };
}
