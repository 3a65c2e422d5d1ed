import { apiKeysRouter } from './api-keys/api-keys.router.ts';
import { chatRouter } from './chat/chat.router.ts';
import { documentSetsRouter } from './document-sets/document-sets.router.ts';
import { documentsRouter } from './documents/documents.router.ts';
import { healthRouter } from './health.router.ts';
import { personalTokensRouter } from './identity/identity.router.ts';
import { personasRouter } from './personas/personas.router.ts';
import { projectsRouter } from './projects/projects.router.ts';
import { searchRouter } from './search/search.router.ts';
import { tokenBudgetsRouter } from './token-budgets/token-budgets.router.ts';
import { toolsRouter } from './tools/tools.router.ts';
import { createCallerFactory, router } from './trpc.ts';
import { userGroupsRouter } from './user-groups/user-groups.router.ts';
import { usersRouter } from './users/users.router.ts';

export const appRouter = router({
  health: healthRouter,
  apiKeys: apiKeysRouter,
  chat: chatRouter,
  projects: projectsRouter,
  tokenBudgets: tokenBudgetsRouter,
  documents: documentsRouter,
  documentSets: documentSetsRouter,
  search: searchRouter,
  personas: personasRouter,
  tools: toolsRouter,
  users: usersRouter,
  personalTokens: personalTokensRouter,
  userGroups: userGroupsRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
