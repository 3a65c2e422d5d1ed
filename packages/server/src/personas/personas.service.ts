import type { Actor } from '../auth/roles.ts';
import type { Db, DbExecutor } from '../db/database.ts';
import { AppError } from '../errors.ts';
import * as toolsRepository from '../tools/tools.repository.ts';
import * as userGroupsRepository from '../user-groups/user-groups.repository.ts';
import { missingIds } from '../user-groups/user-groups.service.ts';
import * as usersRepository from '../users/users.repository.ts';
import * as personasRepository from './personas.repository.ts';
import type {
  CreatePersonaInput,
  DisplayPrioritiesInput,
  FullPersonaSnapshot,
  ListPersonasInput,
  MinimalPersonaPage,
  MinimalPersonaSnapshot,
  PersonaForChat,
  PersonaLabel,
  PersonaPage,
  PersonaSnapshot,
  UpdatePersonaInput,
} from './personas.schemas.ts';

interface Deps {
  db: Db;
  actor: Actor;
}

/**
 * User knowledge (files users upload to attach to agents) does not exist yet, so `user_file_ids` must be
 * empty. The one switch to turn when it lands.
 */
export function isUserKnowledgeEnabled(): boolean {
  return false;
}

function viewerOf(actor: Actor): personasRepository.Viewer {
  return { userId: actor.user_id, isAdmin: actor.role === 'admin', isCurator: actor.role === 'curator' };
}

function notFound(id: number): AppError {
  return new AppError('PERSONA_NOT_FOUND', `Agent (persona) ${id} not found`);
}

interface Access {
  canView: boolean;
  canEdit: boolean;
}

/**
 * What the actor may do with each agent. View: admin, owner, public, shared with the actor or one of its
 * groups. Edit: admin, owner, or a curator who curates every group the agent is shared with (at least one).
 */
async function accessTo(
  db: DbExecutor,
  actor: Actor,
  personas: readonly { id: number; owner_id: string | null; is_public: boolean }[],
): Promise<Map<number, Access>> {
  const result = new Map<number, Access>();
  if (actor.role === 'admin') {
    for (const p of personas) result.set(p.id, { canView: true, canEdit: true });
    return result;
  }
  const ids = personas.map((p) => p.id);
  const [relations, memberOf, curates] = await Promise.all([
    personasRepository.loadRelations(db, ids),
    userGroupsRepository.groupIdsOfUser(db, actor.user_id),
    actor.role === 'curator'
      ? userGroupsRepository.curatedGroupIdsOfUser(db, actor.user_id)
      : Promise.resolve([] as number[]),
  ]);
  const member = new Set(memberOf);
  const curated = new Set(curates);
  for (const p of personas) {
    const groups = relations.groups.filter((g) => g.persona_id === p.id).map((g) => g.group_id);
    const owner = p.owner_id === actor.user_id;
    const canEdit = owner || (groups.length > 0 && groups.every((g) => curated.has(g)));
    const canView =
      canEdit ||
      p.is_public ||
      relations.users.some((u) => u.persona_id === p.id && u.id === actor.user_id) ||
      groups.some((g) => member.has(g));
    result.set(p.id, { canView, canEdit });
  }
  return result;
}

/** Loads a live (not deleted) agent and the actor's rights on it; 404 when missing or deleted. */
async function loadLive(db: DbExecutor, actor: Actor, id: number) {
  const row = await personasRepository.findPersona(db, id);
  if (!row || row.deleted) throw notFound(id);
  const access = (await accessTo(db, actor, [row])).get(id)!;
  return { row, access };
}

function forbiddenView(id: number): AppError {
  return new AppError('INSUFFICIENT_PERMISSIONS', `You do not have access to agent (persona) ${id}`);
}

function forbiddenEdit(id: number): AppError {
  return new AppError(
    'INSUFFICIENT_PERMISSIONS',
    `Only the owner of agent (persona) ${id}, a curator of all its groups or an admin may edit it`,
  );
}

function assembleSnapshots(
  rows: personasRepository.PersonaRow[],
  relations: personasRepository.PersonaRelations,
): FullPersonaSnapshot[] {
  const byPersona = <T extends { persona_id: number }>(items: T[]) => {
    const map = new Map<number, T[]>();
    for (const item of items) {
      const list = map.get(item.persona_id);
      if (list) list.push(item);
      else map.set(item.persona_id, [item]);
    }
    return (id: number) => map.get(id) ?? [];
  };
  const tools = byPersona(relations.tools);
  const documentSets = byPersona(relations.documentSets);
  const labels = byPersona(relations.labels);
  const users = byPersona(relations.users);
  const groups = byPersona(relations.groups);
  const documents = byPersona(relations.documents);
  const nodes = byPersona(relations.nodes);
  const files = byPersona(relations.files);
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    is_public: row.is_public,
    is_listed: row.is_listed,
    is_featured: row.is_featured,
    builtin_persona: row.builtin_persona,
    display_priority: row.display_priority,
    tools: tools(row.id).map(({ persona_id: _, ...tool }) => tool),
    document_sets: documentSets(row.id).map(({ persona_id: _, ...set }) => set),
    starter_messages: row.starter_messages ?? [],
    labels: labels(row.id).map(({ id, name }) => ({ id, name })),
    llm_model_provider_override: row.llm_model_provider_override,
    llm_model_version_override: row.llm_model_version_override,
    owner: row.owner_id && row.owner_email ? { id: row.owner_id, email: row.owner_email } : null,
    deleted: row.deleted,
    system_prompt: row.system_prompt,
    task_prompt: row.task_prompt,
    datetime_aware: row.datetime_aware,
    replace_base_system_prompt: row.replace_base_system_prompt,
    users: users(row.id).map(({ id, email }) => ({ id, email })),
    groups: groups(row.id).map((g) => g.group_id),
    document_ids: documents(row.id).map((d) => d.document_id),
    hierarchy_node_ids: nodes(row.id).map((n) => n.hierarchy_node_id),
    user_file_ids: files(row.id).map((f) => f.user_file_id),
    search_start_date: row.search_start_date ? new Date(row.search_start_date).toISOString() : null,
  }));
}

async function snapshotsOf(db: DbExecutor, rows: personasRepository.PersonaRow[]) {
  return assembleSnapshots(
    rows,
    await personasRepository.loadRelations(
      db,
      rows.map((r) => r.id),
    ),
  );
}

function toPersonaSnapshot(full: FullPersonaSnapshot): PersonaSnapshot {
  const { search_start_date: _, ...snapshot } = full;
  return snapshot;
}

function toMinimalSnapshot(full: FullPersonaSnapshot): MinimalPersonaSnapshot {
  return {
    id: full.id,
    name: full.name,
    description: full.description,
    is_public: full.is_public,
    is_listed: full.is_listed,
    is_featured: full.is_featured,
    builtin_persona: full.builtin_persona,
    display_priority: full.display_priority,
    tools: full.tools,
    document_sets: full.document_sets,
    starter_messages: full.starter_messages,
    labels: full.labels,
    llm_model_provider_override: full.llm_model_provider_override,
    llm_model_version_override: full.llm_model_version_override,
    owner: full.owner,
    deleted: full.deleted,
  };
}

async function fullSnapshot(db: DbExecutor, id: number): Promise<FullPersonaSnapshot> {
  const row = await personasRepository.findPersona(db, id);
  if (!row) throw notFound(id);
  const [snapshot] = await snapshotsOf(db, [row]);
  return snapshot!;
}

/** ISO date or date-time; a date-time without an offset is taken as UTC. */
function parseStartDate(value: string | null | undefined): Date | null | undefined {
  if (value == null) return value;
  const time = value.split('T')[1];
  if (time !== undefined && !/(z|[+-]\d{2}(:?\d{2})?)$/i.test(time)) return new Date(`${value}Z`);
  return new Date(value);
}

function unique<T>(values: readonly T[] | null | undefined): T[] | undefined {
  return values == null ? undefined : [...new Set(values)];
}

interface References {
  document_set_ids?: number[] | undefined;
  tool_ids?: number[] | undefined;
  label_ids?: number[] | undefined;
  users?: string[] | undefined;
  groups?: number[] | undefined;
  user_file_ids?: string[] | undefined;
}

function checkUserFiles(refs: References): void {
  if (refs.user_file_ids?.length && !isUserKnowledgeEnabled()) {
    throw new AppError(
      'INVALID_INPUT',
      `user_file_ids cannot be attached: user knowledge is disabled (${refs.user_file_ids.join(', ')})`,
    );
  }
}

/** Every referenced id must exist (document sets must also be accessible): one 400 naming all offenders. */
async function checkReferences(db: DbExecutor, actor: Actor, refs: References): Promise<void> {
  const viewer = viewerOf(actor);
  const problems: string[] = [];
  const check = async <T>(label: string, ids: T[] | undefined, found: (ids: T[]) => Promise<T[]>) => {
    if (!ids?.length) return;
    const missing = missingIds(ids, await found(ids));
    if (missing.length) problems.push(`${label}: ${missing.join(', ')}`);
  };
  await check('Unknown or inaccessible document sets', refs.document_set_ids, (ids) =>
    personasRepository.findAccessibleDocumentSetIds(db, ids, viewer),
  );
  await check('Unknown tools', refs.tool_ids, (ids) => toolsRepository.findExistingToolIds(db, ids));
  await check('Unknown labels', refs.label_ids, (ids) => personasRepository.findExistingLabelIds(db, ids));
  await check('Unknown users', refs.users, (ids) => usersRepository.findExistingUserIds(db, ids));
  await check('Unknown user groups', refs.groups, (ids) =>
    userGroupsRepository.findExistingGroupIds(db, ids),
  );
  if (problems.length) throw new AppError('INVALID_INPUT', problems.join('; '));
}

async function writeLinks(
  db: DbExecutor,
  id: number,
  input: References & { document_ids?: string[] | undefined; hierarchy_node_ids?: number[] | undefined },
): Promise<void> {
  const {
    document_set_ids,
    tool_ids,
    label_ids,
    users,
    groups,
    user_file_ids,
    document_ids,
    hierarchy_node_ids,
  } = input;
  if (document_set_ids) await personasRepository.replaceDocumentSets(db, id, document_set_ids);
  if (tool_ids) await personasRepository.replaceTools(db, id, tool_ids);
  if (label_ids) await personasRepository.replaceLabels(db, id, label_ids);
  if (users) await personasRepository.replaceUsers(db, id, users);
  if (groups) await personasRepository.replaceGroups(db, id, groups);
  if (user_file_ids) await personasRepository.replaceUserFiles(db, id, user_file_ids);
  if (document_ids) await personasRepository.replaceDocuments(db, id, document_ids);
  if (hierarchy_node_ids) await personasRepository.replaceHierarchyNodes(db, id, hierarchy_node_ids);
}

function linkInput(input: Partial<CreatePersonaInput>) {
  return {
    document_set_ids: unique(input.document_set_ids),
    tool_ids: unique(input.tool_ids),
    label_ids: unique(input.label_ids),
    users: unique(input.users),
    groups: unique(input.groups),
    user_file_ids: unique(input.user_file_ids),
    document_ids: unique(input.document_ids),
    hierarchy_node_ids: unique(input.hierarchy_node_ids),
  };
}

function requireAdminToFeature(actor: Actor): void {
  if (actor.role !== 'admin') {
    throw new AppError('INSUFFICIENT_PERMISSIONS', 'Only an admin can feature an agent');
  }
}

/** Any user may create an agent; it is theirs. Featuring is for admins. */
export async function createPersona({
  ctx,
  input,
}: {
  ctx: Deps;
  input: CreatePersonaInput;
}): Promise<PersonaSnapshot> {
  const links = linkInput(input);
  checkUserFiles(links);
  if (input.is_featured) requireAdminToFeature(ctx.actor);
  const id = await ctx.db.transaction().execute(async (trx) => {
    await checkReferences(trx, ctx.actor, links);
    const row = await personasRepository.insertPersona(trx, {
      name: input.name,
      description: input.description,
      system_prompt: input.system_prompt,
      task_prompt: input.task_prompt,
      datetime_aware: input.datetime_aware,
      replace_base_system_prompt: input.replace_base_system_prompt,
      is_public: input.is_public,
      is_featured: input.is_featured,
      display_priority: input.display_priority ?? null,
      llm_model_provider_override: input.llm_model_provider_override ?? null,
      llm_model_version_override: input.llm_model_version_override ?? null,
      starter_messages: input.starter_messages ?? [],
      search_start_date: parseStartDate(input.search_start_date) ?? null,
      owner_id: ctx.actor.user_id,
    });
    await writeLinks(trx, row.id, links);
    return row.id;
  });
  return toPersonaSnapshot(await fullSnapshot(ctx.db, id));
}

/**
 * Owner, curators of all the agent's groups and admins may update. Omitted fields stay as they are, as do
 * `label_ids: null`, `display_priority` (see the admin reorder endpoint) and `builtin_persona`.
 */
export async function updatePersona({
  ctx,
  input,
}: {
  ctx: Deps;
  input: UpdatePersonaInput;
}): Promise<PersonaSnapshot> {
  const id = input.persona_id;
  const links = linkInput(input);
  checkUserFiles(links);
  await ctx.db.transaction().execute(async (trx) => {
    const { row, access } = await loadLive(trx, ctx.actor, id);
    if (!access.canEdit) throw forbiddenEdit(id);
    if (input.is_featured !== undefined && input.is_featured !== row.is_featured) {
      requireAdminToFeature(ctx.actor);
    }
    await checkReferences(trx, ctx.actor, links);
    await personasRepository.updatePersona(trx, id, {
      name: input.name,
      description: input.description,
      system_prompt: input.system_prompt,
      task_prompt: input.task_prompt,
      datetime_aware: input.datetime_aware,
      replace_base_system_prompt: input.replace_base_system_prompt,
      is_public: input.is_public,
      is_featured: input.is_featured,
      llm_model_provider_override: input.llm_model_provider_override,
      llm_model_version_override: input.llm_model_version_override,
      starter_messages: input.starter_messages === null ? [] : input.starter_messages,
      search_start_date: parseStartDate(input.search_start_date),
    });
    await writeLinks(trx, id, links);
  });
  return toPersonaSnapshot(await fullSnapshot(ctx.db, id));
}

export async function getPersona({ ctx, id }: { ctx: Deps; id: number }): Promise<FullPersonaSnapshot> {
  const { row, access } = await loadLive(ctx.db, ctx.actor, id);
  if (!access.canView) throw forbiddenView(id);
  const [snapshot] = await snapshotsOf(ctx.db, [row]);
  return snapshot!;
}

/** Soft delete: hidden from every list, data kept. Only the owner or an admin; never a built-in agent. */
export async function deletePersona({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await personasRepository.findPersona(trx, id);
    if (!row || row.deleted) throw notFound(id);
    if (ctx.actor.role !== 'admin' && row.owner_id !== ctx.actor.user_id) {
      throw new AppError('INSUFFICIENT_PERMISSIONS', 'You can only delete agents you created');
    }
    if (row.builtin_persona) throw new AppError('INVALID_INPUT', 'Built-in agents cannot be deleted');
    await personasRepository.markDeleted(trx, id);
  });
}

/** Restores a soft-deleted agent (admin only; the router enforces the role). */
export async function undeletePersona({
  ctx,
  id,
}: {
  ctx: { db: Db };
  id: number;
}): Promise<PersonaSnapshot> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await personasRepository.findPersona(trx, id);
    if (!row) throw notFound(id);
    if (!row.deleted) throw new AppError('INVALID_INPUT', `Agent (persona) ${id} is not deleted`);
    await personasRepository.markUndeleted(trx, id);
  });
  return toPersonaSnapshot(await fullSnapshot(ctx.db, id));
}

async function listPage(ctx: Deps, input: ListPersonasInput) {
  const filter: personasRepository.ListFilter = {
    viewer: viewerOf(ctx.actor),
    includeDeleted: input.include_deleted,
    editableOnly: input.get_editable,
    includeDefault: input.include_default,
  };
  const [rows, total] = await Promise.all([
    personasRepository.listPersonas(ctx.db, filter, {
      limit: input.page_size,
      offset: input.page_num * input.page_size,
    }),
    personasRepository.countPersonas(ctx.db, filter),
  ]);
  return { items: await snapshotsOf(ctx.db, rows), total_items: total };
}

/** The agents the actor sees, ordered by display priority (nulls last) then id. */
export async function listPersonas({
  ctx,
  input,
}: {
  ctx: Deps;
  input: ListPersonasInput;
}): Promise<MinimalPersonaPage> {
  const page = await listPage(ctx, input);
  return { items: page.items.map(toMinimalSnapshot), total_items: page.total_items };
}

/** The admin list: same filters, full snapshots. */
export async function listPersonasForAdmin({
  ctx,
  input,
}: {
  ctx: Deps;
  input: ListPersonasInput;
}): Promise<PersonaPage> {
  const page = await listPage(ctx, input);
  return { items: page.items.map(toPersonaSnapshot), total_items: page.total_items };
}

/** Reorders agents: every id must name a live agent the actor may edit. */
export async function setDisplayPriorities({
  ctx,
  input,
}: {
  ctx: Deps;
  input: DisplayPrioritiesInput;
}): Promise<void> {
  const entries = Object.entries(input.display_priority_map).map(([id, priority]) => [Number(id), priority]);
  const ids = entries.map(([id]) => id!);
  await ctx.db.transaction().execute(async (trx) => {
    const lookup = ids.filter((id) => id <= 2_147_483_647);
    const rows = (await personasRepository.findPersonasForUpdate(trx, lookup)).filter((r) => !r.deleted);
    const missing = missingIds(
      ids,
      rows.map((r) => r.id),
    );
    if (missing.length) {
      throw new AppError('PERSONA_NOT_FOUND', `Agents (personas) not found: ${missing.join(', ')}`);
    }
    const access = await accessTo(trx, ctx.actor, rows);
    const denied = ids.filter((id) => !access.get(id)?.canEdit);
    if (denied.length) {
      throw new AppError(
        'INSUFFICIENT_PERMISSIONS',
        `You may not reorder agents (personas): ${denied.join(', ')}`,
      );
    }
    for (const [id, priority] of entries) await personasRepository.setDisplayPriority(trx, id!, priority!);
  });
}

async function setFlag(
  ctx: Deps,
  id: number,
  values: { is_listed?: boolean; is_featured?: boolean; is_public?: boolean },
): Promise<PersonaSnapshot> {
  await ctx.db.transaction().execute(async (trx) => {
    const { access } = await loadLive(trx, ctx.actor, id);
    if (!access.canEdit) throw forbiddenEdit(id);
    await personasRepository.updatePersona(trx, id, values);
  });
  return toPersonaSnapshot(await fullSnapshot(ctx.db, id));
}

/** Shows or hides the agent in the picker. */
export function setListed({ ctx, id, isListed }: { ctx: Deps; id: number; isListed: boolean }) {
  return setFlag(ctx, id, { is_listed: isListed });
}

/** Features the agent (admin only; the router enforces the role). */
export function setFeatured({ ctx, id, isFeatured }: { ctx: Deps; id: number; isFeatured: boolean }) {
  requireAdminToFeature(ctx.actor);
  return setFlag(ctx, id, { is_featured: isFeatured });
}

export function setPublic({ ctx, id, isPublic }: { ctx: Deps; id: number; isPublic: boolean }) {
  return setFlag(ctx, id, { is_public: isPublic });
}

/**
 * For chat: the agent with everything needed to run it, if the actor may use it. 404 when unknown or
 * deleted; 403 (`INSUFFICIENT_PERMISSIONS`, detail naming the persona) when not visible to the actor.
 */
export async function getPersonaForChat({
  ctx,
  personaId,
}: {
  ctx: { db: Db; actor: Actor };
  personaId: number;
}): Promise<PersonaForChat> {
  const { row, access } = await loadLive(ctx.db, ctx.actor, personaId);
  if (!access.canView) throw forbiddenView(personaId);
  const [p] = await snapshotsOf(ctx.db, [row]);
  const full = p!;
  return {
    id: full.id,
    name: full.name,
    description: full.description,
    builtin_persona: full.builtin_persona,
    system_prompt: full.system_prompt,
    task_prompt: full.task_prompt,
    datetime_aware: full.datetime_aware,
    replace_base_system_prompt: full.replace_base_system_prompt,
    tool_ids: full.tools.map((t) => t.id),
    tools: full.tools,
    document_set_ids: full.document_sets.map((d) => d.id),
    document_sets: full.document_sets,
    search_start_date: full.search_start_date,
    llm_model_provider_override: full.llm_model_provider_override,
    llm_model_version_override: full.llm_model_version_override,
    document_ids: full.document_ids,
    hierarchy_node_ids: full.hierarchy_node_ids,
    user_file_ids: full.user_file_ids,
    starter_messages: full.starter_messages,
  };
}

export async function listLabels({ ctx }: { ctx: { db: Db } }): Promise<PersonaLabel[]> {
  return personasRepository.listLabels(ctx.db);
}

function duplicateLabel(name: string): AppError {
  return new AppError('DUPLICATE_RESOURCE', `A label named '${name}' already exists`);
}

export async function createLabel({ ctx, name }: { ctx: { db: Db }; name: string }): Promise<PersonaLabel> {
  return ctx.db.transaction().execute(async (trx) => {
    if (await personasRepository.findLabelByName(trx, name)) throw duplicateLabel(name);
    return personasRepository.insertLabel(trx, name);
  });
}

export async function updateLabel({
  ctx,
  id,
  name,
}: {
  ctx: { db: Db };
  id: number;
  name: string;
}): Promise<PersonaLabel> {
  return ctx.db.transaction().execute(async (trx) => {
    const existing = await personasRepository.findLabelByName(trx, name);
    if (existing && existing.id !== id) throw duplicateLabel(name);
    const label = await personasRepository.renameLabel(trx, id, name);
    if (!label) throw new AppError('LABEL_NOT_FOUND', `Label ${id} not found`);
    return label;
  });
}

/** Deleting a label removes it from every agent. */
export async function deleteLabel({ ctx, id }: { ctx: { db: Db }; id: number }): Promise<void> {
  const deleted = await personasRepository.deleteLabel(ctx.db, id);
  if (!deleted.numDeletedRows) throw new AppError('LABEL_NOT_FOUND', `Label ${id} not found`);
}
