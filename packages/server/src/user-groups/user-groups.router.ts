import { z } from 'zod';
import { adminProcedure, curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  CreateUserGroupInput,
  SetCuratorInput,
  UpdateUserGroupInput,
  UserGroup,
  UserGroupIdInput,
} from './user-groups.schemas.ts';
import * as userGroupsService from './user-groups.service.ts';

const tags = ['User groups'];

export const userGroupsRouter = router({
  list: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/user-group',
        tags,
        summary: 'List user groups',
        description: 'Admins see every group; curators see the groups they curate.',
      },
    })
    .input(z.object({}))
    .output(z.array(UserGroup))
    .query(({ ctx }) => userGroupsService.listUserGroups({ ctx: serviceContext(ctx) })),

  create: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/user-group',
        tags,
        summary: 'Create a user group',
        description: 'Admin only. Unknown user ids → 400; a name already taken → 409.',
      },
    })
    .input(CreateUserGroupInput)
    .output(UserGroup)
    .mutation(({ ctx, input }) => userGroupsService.createUserGroup({ ctx: serviceContext(ctx), input })),

  update: curatorProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/admin/user-group/{user_group_id}',
        tags,
        summary: 'Rename a user group or replace its members',
        description:
          'Admins may change any group, curators only the groups they curate and without removing curators.',
      },
    })
    .input(UpdateUserGroupInput)
    .output(UserGroup)
    .mutation(({ ctx, input }) => userGroupsService.updateUserGroup({ ctx: serviceContext(ctx), input })),

  setCurator: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/manage/admin/user-group/{user_group_id}/set-curator',
        tags,
        summary: 'Make a member a curator of the group, or not',
        description:
          'Admin only. A basic user who becomes a curator gets the curator role; a curator left without groups goes back to basic.',
      },
    })
    .input(SetCuratorInput)
    .output(UserGroup)
    .mutation(({ ctx, input }) => userGroupsService.setCurator({ ctx: serviceContext(ctx), input })),

  delete: adminProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/manage/admin/user-group/{user_group_id}',
        tags,
        summary: 'Delete a user group',
        description: 'Admin only. Removes the memberships and every grant made to the group.',
      },
    })
    .input(UserGroupIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      userGroupsService.deleteUserGroup({ ctx: serviceContext(ctx), id: input.user_group_id }),
    ),
});
