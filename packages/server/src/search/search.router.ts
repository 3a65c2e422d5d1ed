import { curatorProcedure, router, serviceContext } from '../trpc.ts';
import { AdminSearchInput, AdminSearchResponse } from './search.schemas.ts';
import * as searchService from './search.service.ts';

const tags = ['Search'];

export const searchRouter = router({
  adminSearch: curatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/search',
        tags,
        summary: 'Search the document index',
        description:
          'Web-search syntax ("phrase", -exclude, or). One result per document (its best chunk), ordered by ' +
          'relevance, within what the caller may see.',
      },
    })
    .input(AdminSearchInput)
    .output(AdminSearchResponse)
    .mutation(({ ctx, input }) => searchService.adminSearch({ ctx: serviceContext(ctx), input })),
});
