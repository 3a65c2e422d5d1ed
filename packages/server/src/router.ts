import { actionsRouter } from './actions/actions.router.ts';
import { mcpRouter } from './actions/mcp.router.ts';
import { oauthConfigsRouter } from './actions/oauth.router.ts';
import { apiKeysRouter } from './api-keys/api-keys.router.ts';
import { backupRouter } from './backup/backup.router.ts';
import { chatRouter } from './chat/chat.router.ts';
import { connectorsRouter } from './connectors/connectors.router.ts';
import { connectorSourcesRouter } from './connectors/sources.router.ts';
import { documentSetsRouter } from './document-sets/document-sets.router.ts';
import { documentsRouter } from './documents/documents.router.ts';
import { evaluationRouter } from './evaluation/evaluation.router.ts';
import { filesRouter } from './files/files.router.ts';
import { healthRouter } from './health.router.ts';
import { personalTokensRouter } from './identity/identity.router.ts';
import { oauthGrantsRouter } from './oauth-server/oauth-server.router.ts';
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
  backup: backupRouter,
  files: filesRouter,
  projects: projectsRouter,
  tokenBudgets: tokenBudgetsRouter,
  documents: documentsRouter,
  documentSets: documentSetsRouter,
  search: searchRouter,
  evaluation: evaluationRouter,
  personas: personasRouter,
  tools: toolsRouter,
  users: usersRouter,
  personalTokens: personalTokensRouter,
  userGroups: userGroupsRouter,
  connectors: connectorsRouter,
  connectorSources: connectorSourcesRouter,
  actions: actionsRouter,
  mcp: mcpRouter,
  oauthConfigs: oauthConfigsRouter,
  oauthGrants: oauthGrantsRouter,
});

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
