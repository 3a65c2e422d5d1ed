import { z } from 'zod';
import { Role } from '../auth/roles.ts';
import { WellFormedString } from '../validation.ts';

export const MinimalUserSnapshot = z
  .object({ id: z.uuid(), email: z.string() })
  .meta({ id: 'MinimalUserSnapshot', description: 'A user, by id and email' });
export type MinimalUserSnapshot = z.infer<typeof MinimalUserSnapshot>;

export const UserSnapshot = z
  .object({
    id: z.uuid(),
    email: z.string(),
    role: Role,
    account_type: z
      .string()
      .meta({ description: '`service_account` for the user behind an API key, `person` for a person' }),
    is_active: z.boolean().meta({ description: 'A deactivated user is refused on every request' }),
  })
  .meta({ id: 'UserSnapshot' });
export type UserSnapshot = z.infer<typeof UserSnapshot>;

export const UserPage = z
  .object({ items: z.array(UserSnapshot), total_items: z.number().int() })
  .meta({ id: 'UserPage' });
export type UserPage = z.infer<typeof UserPage>;

export const ListUsersInput = z.object({
  q: z.string().trim().max(255).optional().meta({ description: 'Only users whose email contains this text' }),
  page_num: z.number().int().min(0).default(0),
  page_size: z.number().int().min(1).max(100).default(10),
});
export type ListUsersInput = z.infer<typeof ListUsersInput>;

const Email = z.email().max(320);

export const InviteUsersInput = z.object({
  emails: z.array(Email).min(1).max(1000),
  role: Role.default('basic'),
});
export type InviteUsersInput = z.infer<typeof InviteUsersInput>;

export const SetUserRoleInput = z.object({ user_email: Email, new_role: Role });
export type SetUserRoleInput = z.infer<typeof SetUserRoleInput>;

export const UserEmailInput = z.object({ user_email: Email });
export type UserEmailInput = z.infer<typeof UserEmailInput>;

/** A person's account at a source, for permission sync (`github` login, `slack` user id, Google email, Confluence account id). */
export const ExternalIdentity = z
  .object({
    source: WellFormedString.trim().min(1).max(64),
    external_id: WellFormedString.trim().min(1).max(512),
  })
  .meta({ id: 'ExternalIdentity' });
export type ExternalIdentity = z.infer<typeof ExternalIdentity>;

export const ExternalIdentityInput = UserEmailInput.extend(ExternalIdentity.shape);
export type ExternalIdentityInput = z.infer<typeof ExternalIdentityInput>;
