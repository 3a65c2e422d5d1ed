import type { Actor } from '../../auth/roles.ts';
import { loadScope, policy } from '../../auth/scope.ts';
import type { ActorContext } from '../../context.ts';
import type { DbExecutor } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import * as personasRepository from '../personas.repository.ts';
import type {
  FullPersonaSnapshot,
  MinimalPersonaSnapshot,
  PersonaSnapshot,
  SearchMode,
} from '../personas.schemas.ts';

export type Deps = ActorContext<'db'>;

/**
 * User knowledge (files users upload to attach to agents) does not exist yet, so `user_file_ids` must be
 * empty. The one switch to turn when it lands.
 */
export function isUserKnowledgeEnabled(): boolean {
  return false;
}

export function viewerOf(actor: Actor): personasRepository.Viewer {
  return { userId: actor.user_id, isAdmin: actor.role === 'admin', isCurator: actor.role === 'curator' };
}

export function notFound(id: number): AppError {
  return new AppError('PERSONA_NOT_FOUND', `Agent (persona) ${id} not found`);
}

export interface Access {
  canView: boolean;
  canEdit: boolean;
}

/**
 * What the actor may do with each agent. View: admin, owner, public, shared with the actor or one of its
 * groups. Edit: admin, owner, or a curator who curates every group the agent is shared with (at least one).
 */
export async function accessTo(
  db: DbExecutor,
  actor: Actor,
  personas: readonly { id: number; owner_id: string | null; is_public: boolean }[],
  /** Already loaded relations of these agents, to avoid loading them again. */
  loaded?: personasRepository.PersonaRelations,
): Promise<Map<number, Access>> {
  const result = new Map<number, Access>();
  const scope = await loadScope(db, actor);
  if (scope.admin) {
    for (const p of personas) result.set(p.id, { canView: true, canEdit: true });
    return result;
  }
  const relations =
    loaded ??
    (await personasRepository.loadRelations(
      db,
      personas.map((p) => p.id),
    ));
  for (const p of personas) {
    const groups = relations.groups.filter((g) => g.persona_id === p.id).map((g) => g.group_id);
    const canEdit = policy.managePersona(scope, { owner_id: p.owner_id, groups });
    const canView =
      canEdit ||
      p.is_public ||
      relations.users.some((u) => u.persona_id === p.id && u.id === actor.user_id) ||
      policy.viewPersonaThroughGroups(scope, { groups });
    result.set(p.id, { canView, canEdit });
  }
  return result;
}

/** Loads a live (not deleted) agent and the actor's rights on it; 404 when missing or deleted. */
export async function loadLive(db: DbExecutor, actor: Actor, id: number) {
  const row = await personasRepository.findPersona(db, id);
  if (!row || row.deleted) throw notFound(id);
  const access = (await accessTo(db, actor, [row])).get(id)!;
  return { row, access };
}

export function forbiddenEdit(id: number): AppError {
  return new AppError(
    'INSUFFICIENT_PERMISSIONS',
    `Only the owner of agent (persona) ${id}, a curator of all its groups or an admin may edit it`,
  );
}

export function assembleSnapshots(
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
    search_mode: (row.search_mode as SearchMode | null) ?? null,
  }));
}

export async function snapshotsOf(db: DbExecutor, rows: personasRepository.PersonaRow[]) {
  return assembleSnapshots(
    rows,
    await personasRepository.loadRelations(
      db,
      rows.map((r) => r.id),
    ),
  );
}

export function toPersonaSnapshot(full: FullPersonaSnapshot): PersonaSnapshot {
  const { search_start_date: _, search_mode: __, ...snapshot } = full;
  return snapshot;
}

export function toMinimalSnapshot(full: FullPersonaSnapshot): MinimalPersonaSnapshot {
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

export async function fullSnapshot(db: DbExecutor, id: number): Promise<FullPersonaSnapshot> {
  const row = await personasRepository.findPersona(db, id);
  if (!row) throw notFound(id);
  const [snapshot] = await snapshotsOf(db, [row]);
  return snapshot!;
}
