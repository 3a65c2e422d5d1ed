import type { ActionsTables } from '../actions/actions.table.ts';
import type { ApiKeysTables } from '../api-keys/api-keys.table.ts';
import type { ChatTables } from '../chat/chat.table.ts';
import type { ConnectorsTables } from '../connectors/connectors.table.ts';
import type { DocumentSetsTables } from '../document-sets/document-sets.table.ts';
import type { DocumentsTables } from '../documents/documents.table.ts';
import type { FilesTables } from '../files/files.table.ts';
import type { IdentityTables } from '../identity/identity.table.ts';
import type { OauthServerTables } from '../oauth-server/oauth-server.table.ts';
import type { PersonasTables } from '../personas/personas.table.ts';
import type { ProjectsTables } from '../projects/projects.table.ts';
import type { TokenBudgetsTables } from '../token-budgets/token-budgets.table.ts';
import type { ToolsTables } from '../tools/tools.table.ts';
import type { UserGroupsTables } from '../user-groups/user-groups.table.ts';
import type { UsersTables } from '../users/users.table.ts';

/**
 * The hand-kept database type. Each domain declares its tables in its own `<domain>.table.ts` and
 * they are joined here.
 */
export interface Database
  extends UsersTables,
    ApiKeysTables,
    IdentityTables,
    UserGroupsTables,
    DocumentSetsTables,
    ConnectorsTables,
    DocumentsTables,
    FilesTables,
    ToolsTables,
    ActionsTables,
    PersonasTables,
    ProjectsTables,
    ChatTables,
    TokenBudgetsTables,
    OauthServerTables {}
