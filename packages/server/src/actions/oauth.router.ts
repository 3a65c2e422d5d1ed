import { z } from 'zod';
import { adminProcedure, basicProcedure, router, serviceContext } from '../trpc.ts';
import {
  DeletedResponse,
  OAuthCallbackInput,
  OAuthCallbackResponse,
  OAuthConfigCreateInput,
  OAuthConfigIdInput,
  OAuthConfigSnapshot,
  OAuthConfigUpdateInput,
  OAuthInitiateInput,
  OAuthInitiateResponse,
} from './actions.schemas.ts';
import * as actionsService from './actions.service.ts';

const tags = ['OAuth configurations'];

export const oauthConfigsRouter = router({
  create: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/oauth-config/create',
        tags,
        summary: 'Create an OAuth configuration for OpenAPI actions',
        description:
          'Client id and secret are stored encrypted and never returned; `redirect_uri` is what to register.',
      },
    })
    .input(OAuthConfigCreateInput)
    .output(OAuthConfigSnapshot)
    .mutation(({ ctx, input }) => actionsService.createOauthConfig({ ctx: serviceContext(ctx), input })),

  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/oauth-config',
        tags,
        summary: 'List OAuth configurations',
        description:
          'Every OAuth configuration for actions, with the `redirect_uri` to register at the provider; client secrets are never returned.',
      },
    })
    .input(z.object({}))
    .output(z.array(OAuthConfigSnapshot))
    .query(({ ctx }) => actionsService.listOauthConfigs({ ctx: serviceContext(ctx) })),

  get: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/oauth-config/{oauth_config_id}',
        tags,
        summary: 'Get an OAuth configuration',
        description: 'One OAuth configuration; the client secret is never returned.',
      },
    })
    .input(OAuthConfigIdInput)
    .output(OAuthConfigSnapshot)
    .query(({ ctx, input }) =>
      actionsService.getOauthConfig({ ctx: serviceContext(ctx), id: input.oauth_config_id }),
    ),

  update: adminProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/admin/oauth-config/{oauth_config_id}',
        tags,
        summary: 'Update an OAuth configuration',
        description:
          'Changes its endpoints, client or scopes. Moving `token_url` to another origin needs `client_secret` given again; users then connect again.',
      },
    })
    .input(OAuthConfigUpdateInput)
    .output(OAuthConfigSnapshot)
    .mutation(({ ctx, input }) => actionsService.updateOauthConfig({ ctx: serviceContext(ctx), input })),

  delete: adminProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/oauth-config/{oauth_config_id}',
        tags,
        summary: 'Delete an OAuth configuration',
        description: 'With every user’s token for it; 400 while an action uses it.',
      },
    })
    .input(OAuthConfigIdInput)
    .output(DeletedResponse)
    .mutation(({ ctx, input }) =>
      actionsService.deleteOauthConfig({ ctx: serviceContext(ctx), id: input.oauth_config_id }),
    ),

  initiate: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/oauth-config/initiate',
        tags,
        summary: 'Connect your account: get the authorization URL',
        description: 'PKCE (S256) and a one-time state valid for 10 minutes.',
      },
    })
    .input(OAuthInitiateInput)
    .output(OAuthInitiateResponse)
    .mutation(({ ctx, input }) =>
      actionsService.initiateOauth({
        ctx: serviceContext(ctx),
        configId: input.oauth_config_id,
      }),
    ),

  callback: basicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/oauth-config/callback',
        tags,
        summary: 'Finish connecting: exchange the code',
        description: 'Stores your token encrypted; only the user who started the flow can finish it.',
      },
    })
    .input(OAuthCallbackInput)
    .output(OAuthCallbackResponse)
    .mutation(({ ctx, input }) => actionsService.oauthCallback({ ctx: serviceContext(ctx), input })),

  disconnect: basicProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/oauth-config/{oauth_config_id}/token',
        tags,
        summary: 'Forget your token for an OAuth configuration',
        description:
          "Deletes the caller's stored tokens for this configuration; the caller connects again to use its actions.",
      },
    })
    .input(OAuthConfigIdInput)
    .output(DeletedResponse)
    .mutation(({ ctx, input }) =>
      actionsService.disconnectOauth({
        ctx: serviceContext(ctx),
        configId: input.oauth_config_id,
      }),
    ),
});
