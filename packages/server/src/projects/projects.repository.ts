import { sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';

const columns = [
  'p.id',
  'p.name',
  'p.description',
  'p.instructions',
  'p.created_at',
  'p.updated_at',
  'p.user_id',
  sql<number>`(select count(*)::int from chat_sessions s where s.project_id = p.id and not s.deleted)`.as(
    'chat_count',
  ),
] as const;

export function listProjects(db: DbExecutor, userId: string) {
  return db
    .selectFrom('user_projects as p')
    .select(columns)
    .where('p.user_id', '=', userId)
    .orderBy('p.id')
    .execute();
}

export function findProject(db: DbExecutor, id: number) {
  return db.selectFrom('user_projects as p').select(columns).where('p.id', '=', id).executeTakeFirst();
}

export function insertProject(
  db: DbExecutor,
  row: { user_id: string; name: string; description: string; instructions: string },
) {
  return db.insertInto('user_projects').values(row).returning('id').executeTakeFirstOrThrow();
}

export function updateProject(
  db: DbExecutor,
  id: number,
  patch: { name?: string; description?: string; instructions?: string },
) {
  return db
    .updateTable('user_projects')
    .set({ ...patch, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function deleteProject(db: DbExecutor, id: number) {
  return db.deleteFrom('user_projects').where('id', '=', id).executeTakeFirst();
}
