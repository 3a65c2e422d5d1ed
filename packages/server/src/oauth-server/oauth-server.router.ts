import { z } from 'zod';
import { adminProcedure, limitedProcedure, router, serviceContext } from '../trpc.ts';
import { OAuthGrant, OAuthGrantIdInput } from './oauth-server.schemas.ts';
import * as oauthServerService from './oauth-server.service.ts';

const tags = ['MCP clients'];

export const oauthGrantsRouter = router({
  listOwn: limitedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/user/oauth-grants',
        tags,
        summary: 'List the MCP clients I approved',
        description:
          'Each approval (grant) of an MCP client that signed in with OAuth: the client, where it receives its ' +
          'codes, the scopes and the endpoint its tokens are for.',
      },
    })
    .input(z.object({}))
    .output(z.array(OAuthGrant))
    .query(({ ctx }) => oauthServerService.listOwnGrants({ ctx: serviceContext(ctx) })),
  revokeOwn: limitedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/user/oauth-grants/{grant_id}',
        tags,
        summary: 'Revoke an MCP client I approved',
        description: 'Its access and refresh tokens stop working on the next request.',
      },
      noContent: true,
    })
    .input(OAuthGrantIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      oauthServerService.revokeOwnGrant({ ctx: serviceContext(ctx), id: input.grant_id }),
    ),
  listAll: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/oauth-grants',
        tags,
        summary: "List every person's MCP client grants",
        description:
          'Every grant a person gave an MCP client through kas as its OAuth server: the person, the client, its scopes and when it was last used. Admin.',
      },
    })
    .input(z.object({}))
    .output(z.array(OAuthGrant))
    .query(({ ctx }) => oauthServerService.listAllGrants({ ctx: serviceContext(ctx) })),
  revokeAny: adminProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/oauth-grants/{grant_id}',
        tags,
        summary: "Revoke a person's MCP client grant",
        description: 'Its access and refresh tokens stop working on the next request.',
      },
      noContent: true,
    })
    .input(OAuthGrantIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      oauthServerService.revokeAnyGrant({ ctx: serviceContext(ctx), id: input.grant_id }),
    ),
});
