import { z } from 'zod';
import { curatorProcedure, router } from '../trpc.ts';
import { UserSnapshot } from './users.schemas.ts';
import * as usersService from './users.service.ts';

const tags = ['Users'];

export const usersRouter = router({
  list: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/users',
        tags,
        summary: 'List users',
        description:
          'Every user with id, email and role: the service-account users behind API keys. Use the ids to share agents and to fill user groups. Admin or curator.',
      },
    })
    .input(z.object({}))
    .output(z.array(UserSnapshot))
    .query(({ ctx }) => usersService.listUsers({ ctx })),
});
