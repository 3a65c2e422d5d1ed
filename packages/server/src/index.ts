/**
 * The server's public surface (`@kas/server`): what the REST bridge, the CLI and the scripts use. Tests
 * and benchmarks add `@kas/server/testing`; `@kas/server/startup` is what a process reads before the
 * server's modules load. Nothing else of the package is importable.
 */
export * as apiKeysService from './api-keys/api-keys.service.ts';
export { type Actor, Role } from './auth/roles.ts';
export { createBackup, restoreBackup } from './backup/backup.ts';
export type { ChatStreamLine } from './chat/chat.schemas.ts';
export { type Config, ConfigError, configFrom, loadConfig, unknownSettings } from './config.ts';
export { type AppDeps, type Context, createInnerContext } from './context.ts';
export { type CreateDbOptions, createDatabase, migrateToLatest, openPGlite } from './db/database.ts';
export { DataDirLockedError } from './db/lockfile.ts';
export * as documentsService from './documents/documents.service.ts';
export {
  AppError,
  ERROR_CODES,
  ERROR_STATUS,
  type ErrorCode,
  RETRYABLE_ERROR_CODES,
  StartupError,
  toErrorResponse,
} from './errors.ts';
export * as evaluationService from './evaluation/evaluation.service.ts';
export * as identityService from './identity/identity.service.ts';
export { createLogger, type LineSink, type Logger, lineSink } from './logger.ts';
export { MCP_SCOPES } from './mcp/mcp.schemas.ts';
export { createMcpServer } from './mcp/mcp.tools.ts';
export {
  applyMemorySettings,
  heapLimitMb,
  releaseStartupGarbage,
  restartTuned,
  wasmOptimizing,
} from './memory.ts';
export { type OAuthErrorCode, OAuthProtocolError } from './oauth-server/oauth-server.schemas.ts';
export * as oauthServerService from './oauth-server/oauth-server.service.ts';
export * as oidcSignInService from './oauth-server/oidc-sign-in.service.ts';
export { ChatCompletionInput } from './openai/openai.schemas.ts';
export * as openaiService from './openai/openai.service.ts';
export { type AppRouter, appRouter, createCaller } from './router.ts';
export { createRuntime, type Runtime } from './runtime.ts';
export { admit, authorize, type KasMeta, procedureMinRole, procedureReadsKey } from './trpc.ts';
export * as usersService from './users/users.service.ts';
export { KAS_VERSION } from './version.ts';
export { WORKER_TASKS } from './worker/tasks.ts';
export { startWorker } from './worker/worker.ts';
