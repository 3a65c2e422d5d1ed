import type { ColumnType } from 'kysely';
import type { ActionsTables } from '../actions/actions.table.ts';
import type { ApiKeysTables } from '../api-keys/api-keys.table.ts';
import type { ChatMessagesTable, ChatSessionsTable } from '../chat/chat.table.ts';
import type { ConnectorsTables } from '../connectors/connectors.table.ts';
import type { DocumentSetsTables } from '../document-sets/document-sets.table.ts';
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
import type { UserGroupsTables } from '../user-groups/user-groups.table.ts';
import type { UsersTables } from '../users/users.table.ts';

/** Columns the database fills in on insert. */
export type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

/**
 * The hand-kept database type. Each domain declares its tables in its own `<domain>.table.ts` and
 * they are joined here.
 */
export interface Database
  extends UsersTables,
    ApiKeysTables,
    UserGroupsTables,
    DocumentSetsTables,
    ConnectorsTables,
    DocumentsTables,
    IdentityTables,
    ActionsTables {
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
