import type { Generated, Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface UserGroupsTable {
  id: Generated<number>;
  name: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface UserGroupMembersTable {
  group_id: number;
  user_id: string;
  is_curator: Generated<boolean>;
}

export interface UserGroupsTables {
  user_groups: UserGroupsTable;
  user_group_members: UserGroupMembersTable;
}

export type UserGroup = Selectable<UserGroupsTable>;
export type UserGroupMember = Selectable<UserGroupMembersTable>;
