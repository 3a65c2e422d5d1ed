import { z } from 'zod';

export const TokenBudget = z
  .object({
    token_id: z.number().int(),
    scope: z.enum(['global', 'user', 'user_group']),
    group_id: z.number().int().nullable(),
    enabled: z.boolean(),
    token_budget: z.number().int().meta({ description: 'Thousands of tokens per period' }),
    period_hours: z.number().int(),
  })
  .meta({ id: 'TokenBudget' });
export type TokenBudget = z.infer<typeof TokenBudget>;

export const TokenBudgetArgs = z.object({
  enabled: z.boolean().default(true),
  token_budget: z
    .number()
    .int()
    .min(0)
    .max(1_000_000_000)
    .meta({ description: 'Thousands of tokens per period' }),
  period_hours: z.number().int().min(1).max(8760),
});
export type TokenBudgetArgs = z.infer<typeof TokenBudgetArgs>;

export const GroupIdInput = z.object({ group_id: z.number().int().positive() });
export const GroupBudgetInput = TokenBudgetArgs.extend({ group_id: z.number().int().positive() });
export const TokenIdInput = z.object({ token_id: z.number().int().positive() });
export const UpdateTokenBudgetInput = TokenBudgetArgs.extend({ token_id: z.number().int().positive() });
