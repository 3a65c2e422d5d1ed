import { z } from 'zod';
import { limitedProcedure, router, serviceContext } from '../trpc.ts';
import { CreatePersonalTokenInput, PersonalAccessToken, PersonalTokenIdInput } from './identity.schemas.ts';
import * as identityService from './identity.service.ts';

const tags = ['Personal access tokens'];

export const personalTokensRouter = router({
  list: limitedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/user/pats',
        tags,
        summary: 'List my personal access tokens',
        description: "The caller's own tokens, masked.",
      },
    })
    .input(z.object({}))
    .output(z.array(PersonalAccessToken))
    .query(({ ctx }) => identityService.listPersonalTokens({ ctx: serviceContext(ctx) })),
  create: limitedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/user/pats',
        tags,
        summary: 'Create a personal access token',
        description:
          "A `kpat-…` token that acts as the caller with their current role. The full token is in this response only. It expires no later than the credential used to create it: a longer or absent `expiration_days` is shortened to that credential's expiry (`expires_at` says when); an OIDC sign-in sets no limit. An API key's service account gets no personal tokens (403 `INSUFFICIENT_PERMISSIONS`).",
      },
    })
    .input(CreatePersonalTokenInput)
    .output(PersonalAccessToken)
    .mutation(({ ctx, input }) =>
      identityService.createOwnPersonalToken({ ctx: serviceContext(ctx), input }),
    ),
  revoke: limitedProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/user/pats/{token_id}',
        tags,
        summary: 'Revoke one of my personal access tokens',
        description: 'It stops working on the next request.',
      },
      noContent: true,
    })
    .input(PersonalTokenIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      identityService.revokePersonalToken({ ctx: serviceContext(ctx), id: input.token_id }),
    ),
});
