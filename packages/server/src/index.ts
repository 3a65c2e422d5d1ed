export * as apiKeysService from './api-keys/api-keys.service.ts';
export { type Actor, Role } from './auth/roles.ts';
export { createBackup, restoreBackup } from './backup/backup.ts';
export type { ChatStreamLine, SendMessageInput } from './chat/chat.schemas.ts';
export * as chatService from './chat/chat.service.ts';
export * from './config.ts';
export * from './context.ts';
export {
  type CreateDbOptions,
  createDatabase,
  type DatabaseHandle,
  type Db,
  migrateToLatest,
  openPGlite,
} from './db/database.ts';
export { DataDirLockedError } from './db/lockfile.ts';
export * as documentsService from './documents/documents.service.ts';
export * from './errors.ts';
export * as evaluationService from './evaluation/evaluation.service.ts';
export * as filesService from './files/files.service.ts';
export * as identityService from './identity/identity.service.ts';
export * from './identity/principals.ts';
export * from './logger.ts';
export * from './memory.ts';
export * as personasRepository from './personas/personas.repository.ts';
export { DEFAULT_PERSONA_ID, type PersonaForChat } from './personas/personas.schemas.ts';
export * as personasService from './personas/personas.service.ts';
export { type AppRouter, appRouter, type ClientRouter, createCaller } from './router.ts';
export * from './runtime.ts';
export * as searchService from './search/search.service.ts';
export type { SearchIndex } from './search/search-index.ts';
export * as toolsService from './tools/tools.service.ts';
export { type KasMeta, type MinRole, procedureMinRole, procedureReadsKey } from './trpc.ts';
export * as userGroupsRepository from './user-groups/user-groups.repository.ts';
export * as userGroupsService from './user-groups/user-groups.service.ts';
export * as usersService from './users/users.service.ts';
export type { WorkerTask } from './worker/task.ts';
export { WORKER_TASKS } from './worker/tasks.ts';
export { startWorker, type Worker } from './worker/worker.ts';
