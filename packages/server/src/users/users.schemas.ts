import { z } from 'zod';
import { Role } from '../auth/roles.ts';

export const MinimalUserSnapshot = z
  .object({ id: z.uuid(), email: z.string() })
  .meta({ id: 'MinimalUserSnapshot', description: 'A user, by id and email' });
export type MinimalUserSnapshot = z.infer<typeof MinimalUserSnapshot>;

export const UserSnapshot = z
  .object({
    id: z.uuid(),
    email: z.string(),
    role: Role,
    account_type: z.string().meta({ description: '`service_account` for the user behind an API key' }),
  })
  .meta({ id: 'UserSnapshot' });
export type UserSnapshot = z.infer<typeof UserSnapshot>;
