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

export interface TokenBudgetsTables {
  token_budgets: TokenBudgetsTable;
}
