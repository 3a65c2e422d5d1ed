import { z } from 'zod';
import { adminProcedure, basicProcedure, router, serviceContext } from '../trpc.ts';
import {
  ApiKeyDescriptor,
  ApiKeyIdInput,
  CreateApiKeyInput,
  Me,
  UpdateApiKeyInput,
} from './api-keys.schemas.ts';
import * as apiKeysService from './api-keys.service.ts';

const tags = ['API keys'];

export const apiKeysRouter = router({
  me: basicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/me',
        tags,
        summary: 'Who am I',
        description: 'The user, role and key id behind the API key of the request. Any role.',
      },
    })
    .input(z.object({}))
    .output(Me)
    .query(({ ctx }) => apiKeysService.describeCaller({ actor: ctx.actor })),

  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/api-key',
        tags,
        summary: 'List API keys',
        description:
          'Every API key, masked (`api_key_display`), with its name, role, expiry and service-account user. The full value appears only when a key is created or regenerated. Admin.',
      },
    })
    .input(z.object({}))
    .output(z.array(ApiKeyDescriptor))
    .query(({ ctx }) => apiKeysService.listApiKeys({ ctx: serviceContext(ctx) })),

  create: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/api-key',
        tags,
        summary: 'Create an API key',
        description:
          'Creates a key and its service-account user. The response is the only place the full key appears.',
      },
    })
    .input(CreateApiKeyInput)
    .output(ApiKeyDescriptor)
    .mutation(({ ctx, input }) => apiKeysService.createApiKey({ ctx: serviceContext(ctx), input })),

  regenerate: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/api-key/{api_key_id}/regenerate',
        tags,
        summary: 'Regenerate an API key',
        description: 'Issues a new key value; the old value stops working at once.',
      },
    })
    .input(ApiKeyIdInput)
    .output(ApiKeyDescriptor)
    .mutation(({ ctx, input }) =>
      apiKeysService.regenerateApiKey({ ctx: serviceContext(ctx), id: input.api_key_id }),
    ),

  update: adminProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/api-key/{api_key_id}',
        tags,
        summary: 'Rename an API key or change its role',
        description:
          'Changes only the fields given: name, role, expiry (`expires_in_days` from now; null: never) and whether the key may mint personal tokens. Applies from the next request. Admin.',
      },
    })
    .input(UpdateApiKeyInput)
    .output(ApiKeyDescriptor)
    .mutation(({ ctx, input }) => apiKeysService.updateApiKey({ ctx: serviceContext(ctx), input })),

  delete: adminProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/admin/api-key/{api_key_id}',
        tags,
        summary: 'Revoke an API key',
        description:
          'Deletes the key and its service-account user; the key is refused (401) from the next request. Admin.',
      },
    })
    .input(ApiKeyIdInput)
    .output(z.void())
    .mutation(({ ctx, input }) =>
      apiKeysService.deleteApiKey({ ctx: serviceContext(ctx), id: input.api_key_id }),
    ),
});
