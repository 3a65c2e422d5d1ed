import type { DbExecutor } from '../db/database.ts';

function selectProjects(db: DbExecutor) {
  return db.selectFrom('user_projects as p').select((eb) => [
    'p.id',
    'p.name',
    'p.description',
    'p.instructions',
    'p.created_at',
    'p.updated_at',
    'p.user_id',
    eb
      .selectFrom('chat_sessions as s')
      .select(eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .whereRef('s.project_id', '=', 'p.id')
      .where((eb) => eb.not(eb.ref('s.deleted')))
      .$asScalar()
      .$notNull()
      .as('chat_count'),
  ]);
}

export function listProjects(db: DbExecutor, userId: string) {
  return selectProjects(db).where('p.user_id', '=', userId).orderBy('p.id').execute();
}

export function findProject(db: DbExecutor, id: number) {
  return selectProjects(db).where('p.id', '=', id).executeTakeFirst();
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
    .set((eb) => ({ ...patch, updated_at: eb.fn<Date>('now') }))
    .where('id', '=', id)
    .executeTakeFirst();
}

export function deleteProject(db: DbExecutor, id: number) {
  return db.deleteFrom('user_projects').where('id', '=', id).executeTakeFirst();
}
