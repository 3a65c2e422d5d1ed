import { z } from 'zod';
import { publicProcedure, router } from './trpc.ts';

export const healthRouter = router({
  check: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/health',
        tags: ['Health'],
        summary: 'Liveness check',
        protect: false,
      },
    })
    .input(z.object({}))
    .output(z.object({ status: z.literal('ok') }))
    .query(() => ({ status: 'ok' as const })),
});
