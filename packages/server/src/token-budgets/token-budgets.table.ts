import type { Generated } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface TokenBudgetsTable {
  id: Generated<number>;
  scope: 'global' | 'user' | 'user_group';
  group_id: number | null;
  enabled: Generated<boolean>;
  token_budget: number;
  period_hours: number;
  created_at: CreatedAt;
}

/** The estimated cost of a chat turn being answered, deleted once its answer's tokens are saved. */
export interface TokenBudgetReservationsTable {
  id: Generated<number>;
  user_id: string;
  tokens: number;
  created_at: CreatedAt;
}

export interface TokenBudgetsTables {
  token_budgets: TokenBudgetsTable;
  token_budget_reservations: TokenBudgetReservationsTable;
}
