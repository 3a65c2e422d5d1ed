import type { TRPCBuiltRouter } from '@trpc/server';
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
});

export type AppRouter = typeof appRouter;

type RootTypes = AppRouter['_def']['_config']['$types'];
/**
 * The router as clients see it: every procedure's input and output, the error shape and the
 * transformer, without the server's context (database, logger, …). The SDK bundles this type into
 * its declarations, so programs outside this repository get a fully typed tRPC client.
 */
export type ClientRouter = TRPCBuiltRouter<
  { ctx: object; meta: object; errorShape: RootTypes['errorShape']; transformer: RootTypes['transformer'] },
  AppRouter['_def']['record']
>;
export const createCaller = createCallerFactory(appRouter);
