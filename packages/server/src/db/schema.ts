import type { ColumnType, Generated } from 'kysely';
import type { ActionsTables } from '../actions/actions.table.ts';
import type { ChatMessagesTable, ChatSessionsTable } from '../chat/chat.table.ts';
import type { DocumentsTables } from '../documents/documents.table.ts';
import type { UserFilesTable } from '../files/files.table.ts';
import type { IdentityTables } from '../identity/identity.table.ts';
import type {
  PersonaDocumentSetsTable,
  PersonaDocumentsTable,
  PersonaGroupsTable,
  PersonaHierarchyNodesTable,
  PersonaLabelLinksTable,
  PersonaLabelsTable,
  PersonasTable,
  PersonaToolsTable,
  PersonaUserFilesTable,
  PersonaUsersTable,
} from '../personas/personas.table.ts';
import type { UserProjectsTable } from '../projects/projects.table.ts';
import type { TokenBudgetsTable } from '../token-budgets/token-budgets.table.ts';
import type { ToolsTable } from '../tools/tools.table.ts';
import type { CreatedAt } from './columns.ts';

export interface UsersTable {
  id: Generated<string>;
  email: string;
  role: 'limited' | 'basic' | 'curator' | 'admin';
  account_type: Generated<string>;
  is_active: Generated<boolean>;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: Generated<number>;
  name: string | null;
  hashed_key: string;
  display: string;
  user_id: string;
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface UserGroupsTable {
  id: Generated<number>;
  name: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface UserGroupMembersTable {
  group_id: number;
  user_id: string;
  is_curator: Generated<boolean>;
}

export interface DocumentSetsTable {
  id: Generated<number>;
  name: string;
  description: Generated<string>;
  is_public: Generated<boolean>;
  owner_id: string | null;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface DocumentSetGroupsTable {
  document_set_id: number;
  group_id: number;
}

export interface DocumentSetUsersTable {
  document_set_id: number;
  user_id: string;
}

/**
 * The hand-kept database type. Each domain declares its tables in its own `<domain>.table.ts` and
 * they are joined here.
 */
export interface Database extends DocumentsTables, IdentityTables, ActionsTables {
  users: UsersTable;
  api_keys: ApiKeysTable;
  user_groups: UserGroupsTable;
  user_group_members: UserGroupMembersTable;
  document_sets: DocumentSetsTable;
  document_set_groups: DocumentSetGroupsTable;
  document_set_users: DocumentSetUsersTable;
  tools: ToolsTable;
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
  user_projects: UserProjectsTable;
  chat_sessions: ChatSessionsTable;
  chat_messages: ChatMessagesTable;
  user_files: UserFilesTable;
  token_budgets: TokenBudgetsTable;
}
