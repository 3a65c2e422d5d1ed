import { z } from 'zod';
import { ExpiresInDays } from '../auth/credential.ts';

export const PersonalAccessToken = z
  .object({
    id: z.number().int(),
    name: z.string(),
    token_display: z.string().meta({ description: 'Masked form of the token, safe to show' }),
    token: z
      .string()
      .optional()
      .meta({ description: 'Full token value (`kpat-…`); present only in the response that created it' }),
    created_at: z.string(),
    expires_at: z.string().nullable().meta({ description: 'ISO 8601; null: never expires' }),
    last_used_at: z.string().nullable(),
  })
  .meta({ id: 'PersonalAccessToken' });
export type PersonalAccessToken = z.infer<typeof PersonalAccessToken>;

export const CreatePersonalTokenInput = z.object({
  name: z.string().trim().min(1).max(255),
  expiration_days: ExpiresInDays.optional().meta({
    description:
      "Days until the token expires; null or absent: never. Never later than the credential that creates it: a longer (or absent) lifetime is shortened to that credential's expiry, which `expires_at` in the answer shows",
  }),
});
export type CreatePersonalTokenInput = z.infer<typeof CreatePersonalTokenInput>;

export const PersonalTokenIdInput = z.object({ token_id: z.number().int().positive() });
