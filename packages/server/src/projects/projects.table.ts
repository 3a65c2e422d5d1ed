import type { Generated } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface UserProjectsTable {
  id: Generated<number>;
  user_id: string;
  name: string;
  description: Generated<string>;
  instructions: Generated<string>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface ProjectsTables {
  user_projects: UserProjectsTable;
}
