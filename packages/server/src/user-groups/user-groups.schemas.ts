import { z } from 'zod';
import { UserSnapshot } from '../users/users.schemas.ts';
import { WellFormedString } from '../validation.ts';

export const UserGroupId = z
  .number()
  .int()
  .min(0)
  .max(2_147_483_647)
  .meta({ description: 'Id of the user group' });

export const UserGroup = z
  .object({
    id: z.number().int(),
    name: z.string(),
    users: z.array(UserSnapshot).meta({ description: 'Members, curators included' }),
    curator_ids: z.array(z.uuid()).meta({ description: 'Members who curate the group' }),
  })
  .meta({ id: 'UserGroup' });
export type UserGroup = z.infer<typeof UserGroup>;

const GroupName = WellFormedString.trim().min(1).max(255);

export const CreateUserGroupInput = z.object({
  name: GroupName,
  user_ids: z.array(z.uuid()).default([]).meta({ description: 'Initial members' }),
});
export type CreateUserGroupInput = z.infer<typeof CreateUserGroupInput>;

export const UpdateUserGroupInput = z.object({
  user_group_id: UserGroupId,
  name: GroupName.optional(),
  user_ids: z
    .array(z.uuid())
    .optional()
    .meta({ description: 'The complete new member list; members who stay keep their curator flag' }),
});
export type UpdateUserGroupInput = z.infer<typeof UpdateUserGroupInput>;

export const UserGroupIdInput = z.object({ user_group_id: UserGroupId });

export const SetCuratorInput = z.object({
  user_group_id: UserGroupId,
  user_id: z.uuid(),
  is_curator: z.boolean(),
});
export type SetCuratorInput = z.infer<typeof SetCuratorInput>;
