import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface StarterMessageRow {
  name: string;
  description?: string | undefined;
  message: string;
}

export interface PersonasTable {
  id: Generated<number>;
  name: string;
  description: Generated<string>;
  system_prompt: Generated<string>;
  task_prompt: Generated<string>;
  datetime_aware: Generated<boolean>;
  replace_base_system_prompt: Generated<boolean>;
  is_public: Generated<boolean>;
  is_listed: Generated<boolean>;
  is_featured: Generated<boolean>;
  builtin_persona: Generated<boolean>;
  display_priority: number | null;
  llm_model_provider_override: string | null;
  llm_model_version_override: string | null;
  /** jsonb: written as a JSON string, read back parsed. */
  starter_messages: ColumnType<StarterMessageRow[], string | undefined, string>;
  search_start_date: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** `SearchMode`; null: decided by the provider's tool calling. */
  search_mode: ColumnType<string | null, string | null | undefined, string | null>;
  owner_id: string | null;
  deleted: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface PersonaUsersTable {
  persona_id: number;
  user_id: string;
}

export interface PersonaGroupsTable {
  persona_id: number;
  group_id: number;
}

export interface PersonaDocumentSetsTable {
  persona_id: number;
  document_set_id: number;
}

export interface PersonaToolsTable {
  persona_id: number;
  tool_id: number;
}

export interface PersonaLabelsTable {
  id: Generated<number>;
  name: string;
  created_at: CreatedAt;
}

export interface PersonaLabelLinksTable {
  persona_id: number;
  label_id: number;
}

export interface PersonaDocumentsTable {
  persona_id: number;
  document_id: string;
}

export interface PersonaHierarchyNodesTable {
  persona_id: number;
  hierarchy_node_id: number;
}

export interface PersonaUserFilesTable {
  persona_id: number;
  user_file_id: string;
}

export interface PersonasTables {
  personas: PersonasTable;
  persona_users: PersonaUsersTable;
  persona_groups: PersonaGroupsTable;
  persona_document_sets: PersonaDocumentSetsTable;
  persona_tools: PersonaToolsTable;
  persona_labels: PersonaLabelsTable;
  persona_label_links: PersonaLabelLinksTable;
  persona_documents: PersonaDocumentsTable;
  persona_hierarchy_nodes: PersonaHierarchyNodesTable;
  persona_user_files: PersonaUserFilesTable;
}
