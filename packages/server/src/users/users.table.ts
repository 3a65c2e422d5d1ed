import type { Generated, Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface UsersTable {
  id: Generated<string>;
  email: string;
  role: 'limited' | 'basic' | 'curator' | 'admin';
  account_type: Generated<string>;
  is_active: Generated<boolean>;
  created_at: CreatedAt;
}

export interface UsersTables {
  users: UsersTable;
}

export type User = Selectable<UsersTable>;
