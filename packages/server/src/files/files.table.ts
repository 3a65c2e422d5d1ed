import type { Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface UserFilesTable {
  id: Generated<string>;
  user_id: string;
  name: string;
  content_type: string;
  file_type: string;
  size_bytes: number;
  text_content: string;
  token_count: Generated<number>;
  created_at: CreatedAt;
}

export type UserFile = Selectable<UserFilesTable>;
export type NewUserFile = Insertable<UserFilesTable>;

export interface FilesTables {
  user_files: UserFilesTable;
}
