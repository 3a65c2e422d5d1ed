import { apiKeysRouter } from './api-keys/api-keys.router.ts';
import { healthRouter } from './health.router.ts';
import { createCallerFactory, router } from './trpc.ts';

export const appRouter = router({
  health: healthRouter,
  apiKeys: apiKeysRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
