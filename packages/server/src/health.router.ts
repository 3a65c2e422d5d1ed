import { z } from 'zod';
import { publicProcedure, router } from './trpc.ts';
import { KAS_VERSION } from './version.ts';

export const healthRouter = router({
  check: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/health',
        tags: ['Health'],
        summary: 'Liveness check',
        description:
          'Answers 200 with the version of kas while the process serves requests. Needs no key: for load balancers and container health checks.',
        protect: false,
      },
    })
    .input(z.object({}))
    .output(
      z.object({
        status: z.literal('ok'),
        version: z.string().meta({ description: 'The version of kas that answers, e.g. 0.1.0' }),
      }),
    )
    .query(() => ({ status: 'ok' as const, version: KAS_VERSION })),
});
