import type { DbExecutor } from '../db/database.ts';
import type { NewUserFile } from './files.table.ts';

export function insertFile(db: DbExecutor, row: NewUserFile) {
  return db
    .insertInto('user_files')
    .values(row)
    .returning(['id', 'name', 'file_type'])
    .executeTakeFirstOrThrow();
}

export function findFiles(db: DbExecutor, ids: string[]) {
  if (!ids.length) return Promise.resolve([]);
  return db
    .selectFrom('user_files')
    .select(['id', 'user_id', 'name', 'file_type', 'text_content'])
    .where('id', 'in', ids)
    .execute();
}
