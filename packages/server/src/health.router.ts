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
        description: 'Answers 200 while the process serves requests. Needs no key.',
        protect: false,
      },
    })
    .input(z.object({}))
    .output(z.object({ status: z.literal('ok') }))
    .query(() => ({ status: 'ok' as const })),
});
