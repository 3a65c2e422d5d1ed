import type { Generated } from 'kysely';
import type { CreatedAt } from '../db/schema.ts';

export interface ToolsTable {
  id: Generated<number>;
  name: string;
  display_name: string;
  description: Generated<string>;
  kind: 'builtin' | 'openapi' | 'mcp';
  in_code_tool_id: string | null;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
