import type { Actor } from '../../auth/roles.ts';
import type { Db } from '../../db/database.ts';
import * as personasRepository from '../personas.repository.ts';
import type {
  FullPersonaSnapshot,
  ListPersonasInput,
  MinimalPersonaPage,
  PersonaForChat,
  PersonaPage,
} from '../personas.schemas.ts';
import {
  accessTo,
  assembleSnapshots,
  type Deps,
  loadLive,
  notFound,
  snapshotsOf,
  toMinimalSnapshot,
  toPersonaSnapshot,
  viewerOf,
} from './shared.ts';

export async function getPersona({ ctx, id }: { ctx: Deps; id: number }): Promise<FullPersonaSnapshot> {
  const { row, access } = await loadLive(ctx.db, ctx.actor, id);
  if (!access.canView) throw notFound(id);
  const [snapshot] = await snapshotsOf(ctx.db, [row]);
  return snapshot!;
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
  // Every chat turn comes here: the relations are loaded once (beside the row, not after it), for both the
  // access check and the answer.
  const [row, relations] = await Promise.all([
    personasRepository.findPersona(ctx.db, personaId),
    personasRepository.loadRelations(ctx.db, [personaId]),
  ]);
  if (!row || row.deleted) throw notFound(personaId);
  const access = (await accessTo(ctx.db, ctx.actor, [row], relations)).get(personaId)!;
  if (!access.canView) throw notFound(personaId);
  const full = assembleSnapshots([row], relations)[0]!;
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
    search_mode: full.search_mode,
    llm_model_provider_override: full.llm_model_provider_override,
    llm_model_version_override: full.llm_model_version_override,
    document_ids: full.document_ids,
    hierarchy_node_ids: full.hierarchy_node_ids,
    user_file_ids: full.user_file_ids,
    starter_messages: full.starter_messages,
  };
}
