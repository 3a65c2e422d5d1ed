import type { ExpressionBuilder } from 'kysely';
import { arrayOf, type DbExecutor } from '../db/database.ts';
import type { Database } from '../db/schema.ts';

/** Who reads: admins see every set; others public ones, their own, and those shared with them or their groups. */
export type SetViewer = { all: true } | { all: false; user_id: string };

function visibleTo(viewer: SetViewer) {
  return (eb: ExpressionBuilder<Database, 'document_sets'>) => {
    if (viewer.all) return eb.lit(true);
    return eb.or([
      eb('document_sets.is_public', '=', true),
      eb('document_sets.owner_id', '=', viewer.user_id),
      eb.exists(
        eb
          .selectFrom('document_set_users as u')
          .select('u.user_id')
          .whereRef('u.document_set_id', '=', 'document_sets.id')
          .where('u.user_id', '=', viewer.user_id),
      ),
      eb.exists(
        eb
          .selectFrom('document_set_groups as g')
          .innerJoin('user_group_members as m', 'm.group_id', 'g.group_id')
          .select('g.group_id')
          .whereRef('g.document_set_id', '=', 'document_sets.id')
          .where('m.user_id', '=', viewer.user_id),
      ),
    ]);
  };
}

function selectSets(db: DbExecutor) {
  return db.selectFrom('document_sets').select((eb) => [
    'document_sets.id',
    'document_sets.name',
    'document_sets.description',
    'document_sets.is_public',
    arrayOf(
      eb
        .selectFrom('document_set_cc_pairs as l')
        .select('l.cc_pair_id')
        .whereRef('l.document_set_id', '=', 'document_sets.id')
        .orderBy('l.cc_pair_id'),
    ).as('cc_pair_ids'),
    arrayOf(
      eb
        .selectFrom('document_set_users as u')
        .select((eb) => eb.cast<string>('u.user_id', 'text').as('user_id'))
        .whereRef('u.document_set_id', '=', 'document_sets.id')
        .orderBy('u.user_id'),
    ).as('users'),
    arrayOf(
      eb
        .selectFrom('document_set_groups as g')
        .select('g.group_id')
        .whereRef('g.document_set_id', '=', 'document_sets.id')
        .orderBy('g.group_id'),
    ).as('groups'),
  ]);
}

export function listSets(db: DbExecutor, viewer: SetViewer) {
  return selectSets(db).where(visibleTo(viewer)).orderBy('document_sets.id').execute();
}

export function findSet(db: DbExecutor, id: number) {
  return selectSets(db).where('document_sets.id', '=', id).executeTakeFirst();
}

export function findSetOwner(db: DbExecutor, id: number) {
  return db
    .selectFrom('document_sets')
    .select(['id', 'owner_id'])
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export function findSetByName(db: DbExecutor, name: string) {
  return db.selectFrom('document_sets').select('id').where('name', '=', name).executeTakeFirst();
}

/** Of these names, the sets that exist, and whether the viewer may see each. */
export function findSetsByName(db: DbExecutor, names: string[], viewer: SetViewer) {
  if (!names.length) return Promise.resolve([]);
  return db
    .selectFrom('document_sets')
    .select(['document_sets.id', 'document_sets.name', (eb) => visibleTo(viewer)(eb).as('visible')])
    .where('document_sets.name', 'in', names)
    .execute();
}

/** Of these ids, the sets that exist, and whether the viewer may see each. */
export function findSetsById(db: DbExecutor, ids: number[], viewer: SetViewer) {
  if (!ids.length) return Promise.resolve([]);
  return db
    .selectFrom('document_sets')
    .select(['document_sets.id', 'document_sets.name', (eb) => visibleTo(viewer)(eb).as('visible')])
    .where('document_sets.id', 'in', ids)
    .execute();
}

export function insertSet(
  db: DbExecutor,
  row: { name: string; description: string; is_public: boolean; owner_id: string | null },
) {
  return db.insertInto('document_sets').values(row).returning('id').executeTakeFirstOrThrow();
}

export function updateSet(
  db: DbExecutor,
  id: number,
  patch: { name?: string; description?: string; is_public?: boolean },
) {
  return db
    .updateTable('document_sets')
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
}

export function deleteSet(db: DbExecutor, id: number) {
  return db.deleteFrom('document_sets').where('id', '=', id).returning('id').executeTakeFirst();
}

export async function replaceCcPairs(db: DbExecutor, id: number, ccPairIds: number[]) {
  await db.deleteFrom('document_set_cc_pairs').where('document_set_id', '=', id).execute();
  if (ccPairIds.length) {
    await db
      .insertInto('document_set_cc_pairs')
      .values(ccPairIds.map((cc_pair_id) => ({ document_set_id: id, cc_pair_id })))
      .execute();
  }
}

export async function replaceUsers(db: DbExecutor, id: number, userIds: string[]) {
  await db.deleteFrom('document_set_users').where('document_set_id', '=', id).execute();
  if (userIds.length) {
    await db
      .insertInto('document_set_users')
      .values(userIds.map((user_id) => ({ document_set_id: id, user_id })))
      .execute();
  }
}

export async function replaceGroups(db: DbExecutor, id: number, groupIds: number[]) {
  await db.deleteFrom('document_set_groups').where('document_set_id', '=', id).execute();
  if (groupIds.length) {
    await db
      .insertInto('document_set_groups')
      .values(groupIds.map((group_id) => ({ document_set_id: id, group_id })))
      .execute();
  }
}
