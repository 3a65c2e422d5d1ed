export * as apiKeysService from './api-keys/api-keys.service.ts';
export type { Actor, Role } from './auth/roles.ts';
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
export * from './errors.ts';
export * from './logger.ts';
export { type AppRouter, appRouter, createCaller } from './router.ts';
export * from './runtime.ts';
export { type KasMeta, toErrorBody } from './trpc.ts';
