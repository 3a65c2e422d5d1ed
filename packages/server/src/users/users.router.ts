import { z } from 'zod';
import { adminProcedure, curatorProcedure, router, serviceContext } from '../trpc.ts';
import {
  ExternalIdentity,
  ExternalIdentityInput,
  InviteUsersInput,
  ListUsersInput,
  SetUserRoleInput,
  UserEmailInput,
  UserPage,
  UserSnapshot,
} from './users.schemas.ts';
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
          'Every user with id, email, role and active flag: people and the service-account users behind API keys. Use the ids to share agents and to fill user groups. Admin or curator.',
      },
    })
    .input(z.object({}))
    .output(z.array(UserSnapshot))
    .query(({ ctx }) => usersService.listUsers({ ctx: serviceContext(ctx) })),
  page: curatorProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/users/accepted',
        tags,
        summary: 'List users, a page at a time',
        description: 'Ordered by email; `q` keeps users whose email contains it. Admin or curator.',
      },
    })
    .input(ListUsersInput)
    .output(UserPage)
    .query(({ ctx, input }) => usersService.pageUsers({ ctx: serviceContext(ctx), input })),
  invite: adminProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/manage/admin/users',
        tags,
        summary: 'Create (invite) people by email',
        description:
          'Creates a person for each email not yet taken, with the role (default basic); returns every named user. They sign in with OIDC or a personal token an admin creates (`kas user token create`). Admin.',
      },
    })
    .input(InviteUsersInput)
    .output(z.array(UserSnapshot))
    .mutation(({ ctx, input }) => usersService.inviteUsers({ ctx: serviceContext(ctx), input })),
  setRole: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/set-user-role',
        tags,
        summary: "Change a user's role",
        description: 'Holds from the next request on. Admin.',
      },
    })
    .input(SetUserRoleInput)
    .output(UserSnapshot)
    .mutation(({ ctx, input }) => usersService.setUserRole({ ctx: serviceContext(ctx), input })),
  deactivate: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/admin/deactivate-user',
        tags,
        summary: 'Deactivate a user',
        description: 'Every credential of the user is refused (401) from the next request on. Admin.',
      },
    })
    .input(UserEmailInput)
    .output(UserSnapshot)
    .mutation(({ ctx, input }) =>
      usersService.setUserActive({ ctx: serviceContext(ctx), input, active: false }),
    ),
  activate: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/manage/admin/activate-user',
        tags,
        summary: 'Reactivate a user',
        description: 'Admin.',
      },
    })
    .input(UserEmailInput)
    .output(UserSnapshot)
    .mutation(({ ctx, input }) =>
      usersService.setUserActive({ ctx: serviceContext(ctx), input, active: true }),
    ),
  delete: adminProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/manage/admin/delete-user',
        tags,
        summary: 'Delete a person',
        description:
          'Deletes their chats, personal tokens, files and private agents; agents shared with others stay. Admin.',
      },
      noContent: true,
    })
    .input(UserEmailInput)
    .output(z.void())
    .mutation(({ ctx, input }) => usersService.deleteUser({ ctx: serviceContext(ctx), input })),
  listExternalIdentities: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/manage/admin/users/external-identities',
        tags,
        summary: "A person's accounts at sources",
        description:
          "The identities permission sync (`access_type: sync`) matches against documents' ACLs. Admin.",
      },
    })
    .input(UserEmailInput)
    .output(z.array(ExternalIdentity))
    .query(({ ctx, input }) => usersService.listExternalIdentities({ ctx: serviceContext(ctx), input })),
  linkExternalIdentity: adminProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/manage/admin/users/external-identities',
        tags,
        summary: 'Link a person to an account at a source',
        description:
          '`source` as connectors name it (`github`, `slack`, `google_drive`, `confluence`), `external_id` the ' +
          "login, user id, email or account id there. Answers all of the person's identities. Admin.",
      },
    })
    .input(ExternalIdentityInput)
    .output(z.array(ExternalIdentity))
    .mutation(({ ctx, input }) => usersService.linkExternalIdentity({ ctx: serviceContext(ctx), input })),
  unlinkExternalIdentity: adminProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/manage/admin/users/external-identities',
        tags,
        summary: 'Unlink a person from an account at a source',
        description: 'Admin.',
      },
    })
    .input(ExternalIdentityInput)
    .output(z.void())
    .mutation(({ ctx, input }) => usersService.unlinkExternalIdentity({ ctx: serviceContext(ctx), input })),
});
