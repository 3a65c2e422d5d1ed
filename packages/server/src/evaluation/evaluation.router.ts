import { adminProcedure, router, serviceContext } from '../trpc.ts';
import { EvaluationInput, EvaluationReport } from './evaluation.schemas.ts';
import * as evaluationService from './evaluation.service.ts';

export const evaluationRouter = router({
  evaluate: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/search/eval',
        tags: ['Search'],
        summary: 'Evaluate retrieval and cited answers on a golden set',
        description:
          'Runs each question through admin search (and, with `chat`, through a chat turn whose session is then ' +
          'deleted) and reports recall@1/5/10, MRR@10 and nDCG@10, and for chat the share of answers citing an ' +
          'expected document and whose citation [1] is expected. `kas eval <golden.jsonl>` runs the same code ' +
          'over HTTP.',
      },
    })
    .input(EvaluationInput)
    .output(EvaluationReport)
    .mutation(({ ctx, input }) => evaluationService.evaluate({ ctx: serviceContext(ctx), input })),
});
