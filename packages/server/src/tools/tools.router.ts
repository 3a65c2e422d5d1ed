import { z } from 'zod';
import { basicProcedure, router, serviceContext } from '../trpc.ts';
import { ToolSnapshot } from './tools.schemas.ts';
import * as toolsService from './tools.service.ts';

const tags = ['Tools'];

export const toolsRouter = router({
  list: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/tool',
        tags,
        summary: 'List tools',
        description: 'The tools that can be attached to an agent through `tool_ids`.',
      },
    })
    .input(z.object({}))
    .output(z.array(ToolSnapshot))
    .query(({ ctx }) => toolsService.listTools({ ctx: serviceContext(ctx) })),
});
