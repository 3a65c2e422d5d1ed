import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import type { Db, DbExecutor } from '../../db/database.ts';
import * as documentSetsRepository from '../../document-sets/document-sets.repository.ts';
import { AppError } from '../../errors.ts';
import { allowedModels } from '../../llm/index.ts';
import { parseTimestamp } from '../../timestamps.ts';
import * as toolsRepository from '../../tools/tools.repository.ts';
import * as userGroupsRepository from '../../user-groups/user-groups.repository.ts';
import { missingIds } from '../../user-groups/user-groups.service.ts';
import * as usersRepository from '../../users/users.repository.ts';
import * as personasRepository from '../personas.repository.ts';
import type {
  CreatePersonaInput,
  DisplayPrioritiesInput,
  PersonaSnapshot,
  UpdatePersonaInput,
} from '../personas.schemas.ts';
import {
  accessTo,
  type Deps,
  forbiddenEdit,
  fullSnapshot,
  isUserKnowledgeEnabled,
  loadLive,
  notFound,
  toPersonaSnapshot,
  viewerOf,
} from './shared.ts';

/** ISO date or date-time; a date-time without an offset is taken as UTC. */
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
  // The document-set visibility rule lives with document sets.
  const setViewer: documentSetsRepository.SetViewer = viewer.isAdmin
    ? { all: true }
    : { all: false, user_id: viewer.userId };
  await check('Unknown or inaccessible document sets', refs.document_set_ids, async (ids) =>
    (await documentSetsRepository.findSetsById(db, ids, setViewer))
      .filter((set) => set.visible)
      .map((set) => set.id),
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

/**
 * An agent's model is one any user may pick (the provider's default and KAS_LLM_MODELS), unless an admin sets
 * it: the agent's model is allowed in its chats, so it must not be a way around the list.
 */
function assertModelAllowed(ctx: Deps & ServiceContext<'config' | 'llm'>, model: string) {
  if (ctx.actor.role === 'admin') return;
  const allowed = allowedModels(ctx.config, ctx.llm);
  if (allowed.includes(model)) return;
  throw new AppError(
    'INVALID_INPUT',
    `llm_model_version_override: "${model}" is not an allowed model; allowed: ${allowed.map((m) => `"${m}"`).join(', ')}`,
  );
}

/** Any user may create an agent; it is theirs. Featuring is for admins. */
export async function createPersona({
  ctx,
  input,
}: {
  ctx: Deps & ServiceContext<'config' | 'llm'>;
  input: CreatePersonaInput;
}): Promise<PersonaSnapshot> {
  const links = linkInput(input);
  checkUserFiles(links);
  if (input.is_featured) requireAdminToFeature(ctx.actor);
  if (input.llm_model_version_override) assertModelAllowed(ctx, input.llm_model_version_override);
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
      search_start_date: input.search_start_date ? parseTimestamp(input.search_start_date) : null,
      search_mode: input.search_mode ?? null,
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
  ctx: Deps & ServiceContext<'config' | 'llm'>;
  input: UpdatePersonaInput;
}): Promise<PersonaSnapshot> {
  const id = input.persona_id;
  const links = linkInput(input);
  checkUserFiles(links);
  await ctx.db.transaction().execute(async (trx) => {
    const { row, access } = await loadLive(trx, ctx.actor, id);
    if (!access.canEdit) throw access.canView ? forbiddenEdit(id) : notFound(id);
    if (input.is_featured !== undefined && input.is_featured !== row.is_featured) {
      requireAdminToFeature(ctx.actor);
    }
    const model = input.llm_model_version_override;
    if (model && model !== row.llm_model_version_override) assertModelAllowed(ctx, model);
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
      search_start_date:
        input.search_start_date == null ? input.search_start_date : parseTimestamp(input.search_start_date),
      search_mode: input.search_mode,
    });
    await writeLinks(trx, id, links);
  });
  return toPersonaSnapshot(await fullSnapshot(ctx.db, id));
}

/** Soft delete: hidden from every list, data kept. Only the owner or an admin; never a built-in agent. */
export async function deletePersona({ ctx, id }: { ctx: Deps; id: number }): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await personasRepository.findPersona(trx, id);
    if (!row || row.deleted) throw notFound(id);
    if (ctx.actor.role !== 'admin' && row.owner_id !== ctx.actor.user_id) {
      // An agent the caller cannot see answers like an absent one.
      if (!(await accessTo(trx, ctx.actor, [row])).get(id)?.canView) throw notFound(id);
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
    if (!access.canEdit) throw access.canView ? forbiddenEdit(id) : notFound(id);
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
