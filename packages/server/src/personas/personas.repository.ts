import type { Expression, ExpressionBuilder, SqlBool, Updateable } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { DbExecutor } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { toolColumns } from '../tools/tools.repository.ts';
import type { PersonasTable, StarterMessageRow } from './personas.table.ts';

/** Who is looking: decides which agents a query may return. */
export interface Viewer {
  userId: string;
  isAdmin: boolean;
  /** Has the curator role: may edit agents shared only with groups it curates. */
  isCurator: boolean;
}

const personaColumns = [
  'personas.id',
  'personas.name',
  'personas.description',
  'personas.system_prompt',
  'personas.task_prompt',
  'personas.datetime_aware',
  'personas.replace_base_system_prompt',
  'personas.is_public',
  'personas.is_listed',
  'personas.is_featured',
  'personas.builtin_persona',
  'personas.display_priority',
  'personas.llm_model_provider_override',
  'personas.llm_model_version_override',
  'personas.starter_messages',
  'personas.search_start_date',
  'personas.search_mode',
  'personas.owner_id',
  'personas.deleted',
  'owner.email as owner_email',
] as const;

type PersonaEb = ExpressionBuilder<Database & { owner: Database['users'] }, 'personas' | 'owner'>;

/**
 * Agents a viewer sees in lists: admins all; others their own, and listed agents that are public, shared
 * with them, or shared with one of their groups.
 */
function listedForViewer(eb: PersonaEb, userId: string): Expression<SqlBool> {
  return eb.or([
    eb('personas.owner_id', '=', userId),
    eb.and([
      eb('personas.is_listed', '=', true),
      eb.or([
        eb('personas.is_public', '=', true),
        eb.exists(
          eb
            .selectFrom('persona_users')
            .select('persona_users.persona_id')
            .whereRef('persona_users.persona_id', '=', 'personas.id')
            .where('persona_users.user_id', '=', userId),
        ),
        eb.exists(
          eb
            .selectFrom('persona_groups')
            .innerJoin('user_group_members', 'user_group_members.group_id', 'persona_groups.group_id')
            .select('persona_groups.persona_id')
            .whereRef('persona_groups.persona_id', '=', 'personas.id')
            .where('user_group_members.user_id', '=', userId),
        ),
      ]),
    ]),
  ]);
}

/** Agents a non-admin may edit: their own, and, for curators, those shared only with groups they curate. */
function editableByViewer(eb: PersonaEb, viewer: Viewer): Expression<SqlBool> {
  const own = eb('personas.owner_id', '=', viewer.userId);
  if (!viewer.isCurator) return own;
  const curated = eb
    .selectFrom('user_group_members')
    .select('user_group_members.group_id')
    .where('user_group_members.user_id', '=', viewer.userId)
    .where('user_group_members.is_curator', '=', true);
  return eb.or([
    own,
    eb.and([
      eb.exists(
        eb
          .selectFrom('persona_groups')
          .select('persona_groups.persona_id')
          .whereRef('persona_groups.persona_id', '=', 'personas.id'),
      ),
      eb.not(
        eb.exists(
          eb
            .selectFrom('persona_groups as pg')
            .select('pg.persona_id')
            .whereRef('pg.persona_id', '=', 'personas.id')
            .where('pg.group_id', 'not in', curated),
        ),
      ),
    ]),
  ]);
}

export interface ListFilter {
  viewer: Viewer;
  includeDeleted: boolean;
  editableOnly: boolean;
  includeDefault: boolean;
}

function filteredPersonas(db: DbExecutor, filter: ListFilter) {
  let query = db.selectFrom('personas').leftJoin('users as owner', 'owner.id', 'personas.owner_id');
  if (!filter.includeDeleted) query = query.where('personas.deleted', '=', false);
  if (!filter.includeDefault) query = query.where('personas.builtin_persona', '=', false);
  const { viewer } = filter;
  if (!viewer.isAdmin) {
    query = query.where((eb) =>
      filter.editableOnly ? editableByViewer(eb, viewer) : listedForViewer(eb, viewer.userId),
    );
  }
  return query;
}

export function listPersonas(db: DbExecutor, filter: ListFilter, page: { limit: number; offset: number }) {
  return filteredPersonas(db, filter)
    .select(personaColumns)
    .orderBy('personas.display_priority', (ob) => ob.asc().nullsLast())
    .orderBy('personas.id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function countPersonas(db: DbExecutor, filter: ListFilter): Promise<number> {
  const row = await filteredPersonas(db, filter)
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function findPersona(db: DbExecutor, id: number) {
  return db
    .selectFrom('personas')
    .leftJoin('users as owner', 'owner.id', 'personas.owner_id')
    .select(personaColumns)
    .where('personas.id', '=', id)
    .executeTakeFirst();
}
export type PersonaRow = NonNullable<Awaited<ReturnType<typeof findPersona>>>;

export async function findPersonasForUpdate(db: DbExecutor, ids: readonly number[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('personas')
    .select(['id', 'owner_id', 'is_public', 'deleted'])
    .where('id', 'in', ids)
    .execute();
}

/** The relations of each agent, keyed by agent id, in one query per relation. */
/** Everything linked to these agents, in one statement (one JSON array per relation and agent). */
export async function loadRelations(db: DbExecutor, personaIds: readonly number[]) {
  const ids = [...personaIds];
  const rows = ids.length
    ? await db
        .selectFrom('personas as p')
        .where('p.id', 'in', ids)
        .select((eb) => [
          jsonArrayFrom(
            eb
              .selectFrom('persona_tools')
              .innerJoin('tools', 'tools.id', 'persona_tools.tool_id')
              .select(['persona_tools.persona_id', ...toolColumns])
              .whereRef('persona_tools.persona_id', '=', 'p.id')
              .orderBy('tools.id'),
          ).as('tools'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_document_sets')
              .innerJoin('document_sets', 'document_sets.id', 'persona_document_sets.document_set_id')
              .select([
                'persona_document_sets.persona_id',
                'document_sets.id',
                'document_sets.name',
                'document_sets.description',
                'document_sets.is_public',
              ])
              .whereRef('persona_document_sets.persona_id', '=', 'p.id')
              .orderBy('document_sets.id'),
          ).as('documentSets'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_label_links')
              .innerJoin('persona_labels', 'persona_labels.id', 'persona_label_links.label_id')
              .select(['persona_label_links.persona_id', 'persona_labels.id', 'persona_labels.name'])
              .whereRef('persona_label_links.persona_id', '=', 'p.id')
              .orderBy('persona_labels.id'),
          ).as('labels'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_users')
              .innerJoin('users', 'users.id', 'persona_users.user_id')
              .select(['persona_users.persona_id', 'users.id', 'users.email'])
              .whereRef('persona_users.persona_id', '=', 'p.id')
              .orderBy('users.email'),
          ).as('users'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_groups')
              .select(['persona_id', 'group_id'])
              .whereRef('persona_groups.persona_id', '=', 'p.id')
              .orderBy('group_id'),
          ).as('groups'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_documents')
              .select(['persona_id', 'document_id'])
              .whereRef('persona_documents.persona_id', '=', 'p.id')
              .orderBy('document_id'),
          ).as('documents'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_hierarchy_nodes')
              .select(['persona_id', 'hierarchy_node_id'])
              .whereRef('persona_hierarchy_nodes.persona_id', '=', 'p.id')
              .orderBy('hierarchy_node_id'),
          ).as('nodes'),
          jsonArrayFrom(
            eb
              .selectFrom('persona_user_files')
              .select(['persona_id', 'user_file_id'])
              .whereRef('persona_user_files.persona_id', '=', 'p.id')
              .orderBy('user_file_id'),
          ).as('files'),
        ])
        .execute()
    : [];
  return {
    tools: rows.flatMap((r) => r.tools),
    documentSets: rows.flatMap((r) => r.documentSets),
    labels: rows.flatMap((r) => r.labels),
    users: rows.flatMap((r) => r.users),
    groups: rows.flatMap((r) => r.groups),
    documents: rows.flatMap((r) => r.documents),
    nodes: rows.flatMap((r) => r.nodes),
    files: rows.flatMap((r) => r.files),
  };
}
export type PersonaRelations = Awaited<ReturnType<typeof loadRelations>>;

/** Columns a create or update may set; `undefined` leaves a column as it is. */
export type PersonaValues = {
  [K in
    | 'name'
    | 'description'
    | 'system_prompt'
    | 'task_prompt'
    | 'datetime_aware'
    | 'replace_base_system_prompt'
    | 'is_public'
    | 'is_listed'
    | 'is_featured'
    | 'display_priority'
    | 'llm_model_provider_override'
    | 'llm_model_version_override'
    | 'search_mode'
    | 'owner_id']?: Updateable<PersonasTable>[K] | undefined;
} & { starter_messages?: StarterMessageRow[] | undefined; search_start_date?: Date | null | undefined };

function toRow(values: PersonaValues) {
  const { starter_messages, ...rest } = values;
  return {
    ...rest,
    ...(starter_messages === undefined ? {} : { starter_messages: JSON.stringify(starter_messages) }),
  } as Record<string, unknown>;
}

export function insertPersona(db: DbExecutor, values: PersonaValues & { name: string }) {
  return db
    .insertInto('personas')
    .values(toRow(values) as never)
    .returning('id')
    .executeTakeFirstOrThrow();
}

export function updatePersona(db: DbExecutor, id: number, values: PersonaValues) {
  return db
    .updateTable('personas')
    .set({ ...toRow(values), updated_at: new Date() } as never)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function markDeleted(db: DbExecutor, id: number) {
  return db
    .updateTable('personas')
    .set({ deleted: true, updated_at: new Date() })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function markUndeleted(db: DbExecutor, id: number) {
  return db
    .updateTable('personas')
    .set({ deleted: false, updated_at: new Date() })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function setDisplayPriority(db: DbExecutor, id: number, displayPriority: number) {
  return db
    .updateTable('personas')
    .set({ display_priority: displayPriority, updated_at: new Date() })
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Replaces one link table's rows for the agent with exactly `values`. */
export async function replaceUsers(db: DbExecutor, personaId: number, userIds: readonly string[]) {
  await db.deleteFrom('persona_users').where('persona_id', '=', personaId).execute();
  if (userIds.length)
    await db
      .insertInto('persona_users')
      .values(userIds.map((user_id) => ({ persona_id: personaId, user_id })))
      .execute();
}

export async function replaceGroups(db: DbExecutor, personaId: number, groupIds: readonly number[]) {
  await db.deleteFrom('persona_groups').where('persona_id', '=', personaId).execute();
  if (groupIds.length)
    await db
      .insertInto('persona_groups')
      .values(groupIds.map((group_id) => ({ persona_id: personaId, group_id })))
      .execute();
}

export async function replaceDocumentSets(db: DbExecutor, personaId: number, ids: readonly number[]) {
  await db.deleteFrom('persona_document_sets').where('persona_id', '=', personaId).execute();
  if (ids.length)
    await db
      .insertInto('persona_document_sets')
      .values(ids.map((document_set_id) => ({ persona_id: personaId, document_set_id })))
      .execute();
}

export async function replaceTools(db: DbExecutor, personaId: number, ids: readonly number[]) {
  await db.deleteFrom('persona_tools').where('persona_id', '=', personaId).execute();
  if (ids.length)
    await db
      .insertInto('persona_tools')
      .values(ids.map((tool_id) => ({ persona_id: personaId, tool_id })))
      .execute();
}

export async function replaceLabels(db: DbExecutor, personaId: number, ids: readonly number[]) {
  await db.deleteFrom('persona_label_links').where('persona_id', '=', personaId).execute();
  if (ids.length)
    await db
      .insertInto('persona_label_links')
      .values(ids.map((label_id) => ({ persona_id: personaId, label_id })))
      .execute();
}

export async function replaceDocuments(db: DbExecutor, personaId: number, ids: readonly string[]) {
  await db.deleteFrom('persona_documents').where('persona_id', '=', personaId).execute();
  if (ids.length)
    await db
      .insertInto('persona_documents')
      .values(ids.map((document_id) => ({ persona_id: personaId, document_id })))
      .execute();
}

export async function replaceHierarchyNodes(db: DbExecutor, personaId: number, ids: readonly number[]) {
  await db.deleteFrom('persona_hierarchy_nodes').where('persona_id', '=', personaId).execute();
  if (ids.length)
    await db
      .insertInto('persona_hierarchy_nodes')
      .values(ids.map((hierarchy_node_id) => ({ persona_id: personaId, hierarchy_node_id })))
      .execute();
}

export async function replaceUserFiles(db: DbExecutor, personaId: number, ids: readonly string[]) {
  await db.deleteFrom('persona_user_files').where('persona_id', '=', personaId).execute();
  if (ids.length)
    await db
      .insertInto('persona_user_files')
      .values(ids.map((user_file_id) => ({ persona_id: personaId, user_file_id })))
      .execute();
}

export function listLabels(db: DbExecutor) {
  return db.selectFrom('persona_labels').select(['id', 'name']).orderBy('name').orderBy('id').execute();
}

export function findLabel(db: DbExecutor, id: number) {
  return db.selectFrom('persona_labels').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
}

export function findLabelByName(db: DbExecutor, name: string) {
  return db.selectFrom('persona_labels').select(['id', 'name']).where('name', '=', name).executeTakeFirst();
}

export function insertLabel(db: DbExecutor, name: string) {
  return db.insertInto('persona_labels').values({ name }).returning(['id', 'name']).executeTakeFirstOrThrow();
}

export function renameLabel(db: DbExecutor, id: number, name: string) {
  return db
    .updateTable('persona_labels')
    .set({ name })
    .where('id', '=', id)
    .returning(['id', 'name'])
    .executeTakeFirst();
}

export function deleteLabel(db: DbExecutor, id: number) {
  return db.deleteFrom('persona_labels').where('id', '=', id).executeTakeFirst();
}

/** The subset of `ids` that name existing labels. */
export async function findExistingLabelIds(db: DbExecutor, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('persona_labels').select('id').where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}
