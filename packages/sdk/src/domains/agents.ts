import type { KasRestClient } from '../client-core.ts';
import { unwrap } from '../client-core.ts';
import type { components } from '../generated/openapi.ts';
import type { QueryParams, RequestBody } from '../types.ts';

type S = components['schemas'];
/** Fields accepted when creating or updating an agent. */
export type PersonaInput = RequestBody<'/api/persona', 'post'>;
/** Query of the agent lists. */
export type AgentListQuery = QueryParams<'/api/agents', 'get'>;

/** Agents (personas), labels and tools. */
export function agentsApi(rest: KasRestClient) {
  return {
    /** Creates an agent owned by the caller. */
    create: (input: PersonaInput): Promise<S['PersonaSnapshot']> =>
      unwrap(rest.POST('/api/persona', { body: input })),
    /** Updates the fields given (owner, users with edit access, admins). */
    update: (personaId: number, input: Partial<PersonaInput>): Promise<S['PersonaSnapshot']> =>
      unwrap(
        rest.PATCH('/api/persona/{persona_id}', {
          params: { path: { persona_id: personaId } },
          body: input as PersonaInput,
        }),
      ),
    /** One agent, with `search_start_date`. */
    get: (personaId: number): Promise<S['FullPersonaSnapshot']> =>
      unwrap(rest.GET('/api/persona/{persona_id}', { params: { path: { persona_id: personaId } } })),
    /** Soft-deletes an agent (owner or admin). */
    delete: async (personaId: number): Promise<void> => {
      await unwrap(rest.DELETE('/api/persona/{persona_id}', { params: { path: { persona_id: personaId } } }));
    },
    /** One page of the agents the caller can see. */
    list: (query: AgentListQuery = {}): Promise<S['MinimalPersonaPage']> =>
      unwrap(rest.GET('/api/agents', { params: { query } })),
    /** Every agent the caller can see, across all pages. */
    listAll: async (
      query: Omit<AgentListQuery, 'page_num' | 'page_size'> = {},
    ): Promise<S['MinimalPersonaSnapshot'][]> => {
      const items: S['MinimalPersonaSnapshot'][] = [];
      for (let page = 0; ; page++) {
        const result = await unwrap(
          rest.GET('/api/agents', { params: { query: { ...query, page_num: page, page_size: 1000 } } }),
        );
        items.push(...result.items);
        if (items.length >= result.total_items || result.items.length === 0) return items;
      }
    },
    /** The admin list (admin or curator): full snapshots. */
    adminList: (query: AgentListQuery = {}): Promise<S['PersonaPage']> =>
      unwrap(rest.GET('/api/admin/agents', { params: { query } })),
    labels: {
      list: (): Promise<S['PersonaLabel'][]> => unwrap(rest.GET('/api/persona/labels')),
      create: (name: string): Promise<S['PersonaLabel']> =>
        unwrap(rest.POST('/api/persona/labels', { body: { name } })),
    },
    /** Tools that agents can use (`tool_ids`). */
    tools: (): Promise<S['ToolSnapshot'][]> => unwrap(rest.GET('/api/tool')),
  };
}

/** User groups and users (admin; curators for the groups they curate). */
export function groupsApi(rest: KasRestClient) {
  return {
    list: (): Promise<S['UserGroup'][]> => unwrap(rest.GET('/api/manage/admin/user-group')),
    create: (input: RequestBody<'/api/manage/admin/user-group', 'post'>): Promise<S['UserGroup']> =>
      unwrap(rest.POST('/api/manage/admin/user-group', { body: input })),
    update: (
      groupId: number,
      input: RequestBody<'/api/manage/admin/user-group/{user_group_id}', 'patch'>,
    ): Promise<S['UserGroup']> =>
      unwrap(
        rest.PATCH('/api/manage/admin/user-group/{user_group_id}', {
          params: { path: { user_group_id: groupId } },
          body: input,
        }),
      ),
    delete: async (groupId: number): Promise<void> => {
      await unwrap(
        rest.DELETE('/api/manage/admin/user-group/{user_group_id}', {
          params: { path: { user_group_id: groupId } },
        }),
      );
    },
    setCurator: (groupId: number, userId: string, isCurator: boolean): Promise<S['UserGroup']> =>
      unwrap(
        rest.POST('/api/manage/admin/user-group/{user_group_id}/set-curator', {
          params: { path: { user_group_id: groupId } },
          body: { user_id: userId, is_curator: isCurator },
        }),
      ),
    /** Every user (the service-account users behind API keys). */
    users: (): Promise<S['UserSnapshot'][]> => unwrap(rest.GET('/api/manage/users')),
  };
}
