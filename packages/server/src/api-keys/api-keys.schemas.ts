import { z } from 'zod';
import { ExpiresInDays } from '../auth/credential.ts';
import { Role } from '../auth/roles.ts';

export const ApiKeyId = z.number().int().positive().meta({ description: 'Unique id of the key' });

const AllowPersonalTokens = z.boolean().meta({
  description:
    "Whether the key's service account may create personal access tokens (never outliving the key, " +
    'dying with it); turning it off also stops the tokens it already made. Default false',
});

export const ApiKeyDescriptor = z
  .object({
    api_key_id: z.number().int(),
    api_key_display: z.string().meta({ description: 'Masked form of the key, safe to show' }),
    api_key: z
      .string()
      .optional()
      .meta({ description: 'Full key value; present only right after creation or regeneration' }),
    api_key_name: z.string().nullable(),
    api_key_role: Role,
    user_id: z.uuid().meta({ description: 'The service-account user behind the key' }),
    expires_at: z
      .string()
      .nullable()
      .meta({ description: 'ISO 8601 instant after which the key is refused (401); null: never expires' }),
    allow_personal_tokens: AllowPersonalTokens,
  })
  .meta({ id: 'ApiKeyDescriptor' });
export type ApiKeyDescriptor = z.infer<typeof ApiKeyDescriptor>;

const ApiKeyName = z.string().trim().max(255).nullable();

export const CreateApiKeyInput = z.object({
  name: ApiKeyName.optional(),
  role: Role.default('basic'),
  expires_in_days: ExpiresInDays.optional(),
  allow_personal_tokens: AllowPersonalTokens.default(false),
});
export type CreateApiKeyInput = z.infer<typeof CreateApiKeyInput>;

export const UpdateApiKeyInput = z.object({
  api_key_id: ApiKeyId,
  name: ApiKeyName.optional(),
  role: Role.optional(),
  expires_in_days: ExpiresInDays.optional().meta({
    description: 'New lifetime in days from now; null removes the expiry; absent leaves it',
  }),
  allow_personal_tokens: AllowPersonalTokens.optional(),
});
export type UpdateApiKeyInput = z.infer<typeof UpdateApiKeyInput>;

export const ApiKeyIdInput = z.object({ api_key_id: ApiKeyId });

export const Me = z
  .object({
    user_id: z.uuid(),
    role: Role,
    api_key_id: z.number().int().nullable().meta({ description: 'The API key used; null for a person' }),
    email: z.string(),
    credential: z.enum(['api_key', 'personal_token', 'oidc', 'oauth']).meta({
      description:
        'How the caller signed in: API key, personal access token, OIDC token or an OAuth token kas issued to an MCP client',
    }),
  })
  .meta({ id: 'Me', description: 'The caller: a service-account user behind an API key, or a person' });
export type Me = z.infer<typeof Me>;
