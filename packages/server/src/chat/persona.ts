import type { Actor } from '../auth/roles.ts';
import type { Db } from '../db/database.ts';
import * as personasRepository from '../personas/personas.repository.ts';
import type { SearchMode } from '../personas/personas.schemas.ts';
import * as personasService from '../personas/personas.service.ts';
import { SEARCH_TOOL_IN_CODE_ID } from '../tools/tools.schemas.ts';

/** What the chat needs to know about an agent. */
export interface ChatPersona {
  id: number;
  name: string;
  system_prompt: string;
  task_prompt: string;
  datetime_aware: boolean;
  replace_base_system_prompt: boolean;
  /** Ids of the document sets the agent searches; empty: everything the caller may see. */
  document_set_ids: number[];
  search_start_date: Date | null;
  /** Ids of documents attached to the agent; empty: no restriction. */
  document_ids: string[];
  search_enabled: boolean;
  /** When it searches; null: first for a provider without tool calling, when the model asks otherwise. */
  search_mode?: SearchMode | null;
  /** The agent's enabled tools (`tool_ids`): the search tool and actions. */
  tool_ids: number[];
  /** Those of its tools that are actions (OpenAPI, MCP): none means no action to load. */
  action_tool_ids: number[];
  llm_model_version_override: string | null;
}

/**
 * The agent of a session, checked against the caller: 404 when unknown or deleted, 403 naming the agent
 * when the caller may not use it.
 */
export async function loadPersona({
  ctx,
  actor,
  personaId,
}: {
  ctx: { db: Db };
  actor: Actor;
  personaId: number;
}): Promise<ChatPersona> {
  const p = await personasService.getPersonaForChat({ ctx: { db: ctx.db, actor }, personaId });
  return {
    id: p.id,
    name: p.name,
    system_prompt: p.system_prompt,
    task_prompt: p.task_prompt,
    datetime_aware: p.datetime_aware,
    replace_base_system_prompt: p.replace_base_system_prompt,
    document_set_ids: p.document_set_ids,
    search_start_date: p.search_start_date ? new Date(p.search_start_date) : null,
    document_ids: p.document_ids,
    search_enabled: p.tools.some((t) => t.in_code_tool_id === SEARCH_TOOL_IN_CODE_ID),
    search_mode: p.search_mode,
    tool_ids: p.tools.map((t) => t.id),
    action_tool_ids: p.tools.filter((t) => t.kind !== 'builtin').map((t) => t.id),
    llm_model_version_override: p.llm_model_version_override,
  };
}

/** The display name of a session's agent, for reading the session (also when it is shared). */
export async function personaName({
  ctx,
  personaId,
}: {
  ctx: { db: Db };
  personaId: number;
}): Promise<string> {
  const row = await personasRepository.findPersona(ctx.db, personaId);
  return row?.name ?? `Agent ${personaId}`;
}
