import { z } from 'zod';
import { adminProcedure, router, serviceContext } from '../trpc.ts';
import {
  GroupBudgetInput,
  GroupIdInput,
  TokenBudget,
  TokenBudgetArgs,
  TokenIdInput,
  UpdateTokenBudgetInput,
} from './token-budgets.schemas.ts';
import * as tokenBudgetsService from './token-budgets.service.ts';

const tags = ['Token budgets'];
const base = '/admin/token-rate-limits';

export const tokenBudgetsRouter = router({
  listGlobal: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: `${base}/global`,
        tags,
        summary: 'List global token budgets',
        description:
          'The budgets on the tokens of all chat messages of the instance together, oldest first. Admin.',
      },
    })
    .input(z.object({}))
    .output(z.array(TokenBudget))
    .query(({ ctx }) => tokenBudgetsService.listBudgets({ ctx: serviceContext(ctx), scope: 'global' })),

  createGlobal: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: `${base}/global`,
        tags,
        summary: 'Add a global token budget',
        description: 'Tokens of all chat messages of the instance per period, in thousands.',
      },
    })
    .input(TokenBudgetArgs)
    .output(TokenBudget)
    .mutation(({ ctx, input }) =>
      tokenBudgetsService.createBudget({ ctx: serviceContext(ctx), scope: 'global', input }),
    ),

  listUsers: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: `${base}/users`,
        tags,
        summary: 'List per-user token budgets',
        description: 'The budgets that apply to every user (and API key) separately, oldest first. Admin.',
      },
    })
    .input(z.object({}))
    .output(z.array(TokenBudget))
    .query(({ ctx }) => tokenBudgetsService.listBudgets({ ctx: serviceContext(ctx), scope: 'user' })),

  createUsers: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: `${base}/users`,
        tags,
        summary: 'Add a per-user token budget',
        description: 'Applies to every user (API key) separately.',
      },
    })
    .input(TokenBudgetArgs)
    .output(TokenBudget)
    .mutation(({ ctx, input }) =>
      tokenBudgetsService.createBudget({ ctx: serviceContext(ctx), scope: 'user', input }),
    ),

  listGroups: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: `${base}/user-groups`,
        tags,
        summary: 'List all group token budgets',
        description: 'The budgets of every user group, each naming its `group_id`. Admin.',
      },
    })
    .input(z.object({}))
    .output(z.array(TokenBudget))
    .query(({ ctx }) => tokenBudgetsService.listBudgets({ ctx: serviceContext(ctx), scope: 'user_group' })),

  listGroup: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: `${base}/user-group/{group_id}`,
        tags,
        summary: "List a group's token budgets",
        description: 'The budgets on the tokens of the members of this user group together. Admin.',
      },
    })
    .input(GroupIdInput)
    .output(z.array(TokenBudget))
    .query(({ ctx, input }) =>
      tokenBudgetsService.listBudgets({
        ctx: serviceContext(ctx),
        scope: 'user_group',
        groupId: input.group_id,
      }),
    ),

  createGroup: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: `${base}/user-group/{group_id}`,
        tags,
        summary: 'Add a token budget for a user group',
        description: 'Tokens of all members of the group together per period, in thousands.',
      },
    })
    .input(GroupBudgetInput)
    .output(TokenBudget)
    .mutation(({ ctx, input }) => {
      const { group_id, ...args } = input;
      return tokenBudgetsService.createBudget({
        ctx: serviceContext(ctx),
        scope: 'user_group',
        groupId: group_id,
        input: args,
      });
    }),

  update: adminProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: `${base}/rate-limit/{token_id}`,
        tags,
        summary: 'Update a token budget',
        description:
          'Replaces its amount (`token_budget`, thousands of tokens), `period_hours` and `enabled` flag; its scope stays. Admin.',
      },
    })
    .input(UpdateTokenBudgetInput)
    .output(TokenBudget)
    .mutation(({ ctx, input }) => {
      const { token_id, ...args } = input;
      return tokenBudgetsService.updateBudget({ ctx: serviceContext(ctx), id: token_id, input: args });
    }),

  delete: adminProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: `${base}/rate-limit/{token_id}`,
        tags,
        summary: 'Delete a token budget',
        description: 'Removes the budget of any scope; chats are no longer counted against it. Admin.',
      },
    })
    .input(TokenIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      tokenBudgetsService.deleteBudget({ ctx: serviceContext(ctx), id: input.token_id }),
    ),
});
