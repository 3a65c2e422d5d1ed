import { z } from 'zod';

export const ToolKind = z.enum(['builtin', 'openapi', 'mcp']).meta({ id: 'ToolKind' });

export const ToolSnapshot = z
  .object({
    id: z.number().int(),
    name: z.string(),
    display_name: z.string(),
    description: z.string(),
    kind: ToolKind.meta({ description: 'Built in, or from an OpenAPI or MCP action' }),
    in_code_tool_id: z
      .string()
      .nullable()
      .meta({ description: 'Which built-in tool this is (`SearchTool`); null for action tools' }),
    mcp_server_id: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The MCP server this tool comes from; null otherwise' }),
    enabled: z.boolean().meta({ description: 'Offered to agents (MCP tools: selected by an admin)' }),
  })
  .meta({ id: 'ToolSnapshot', description: 'A tool an agent can be given through `tool_ids`' });
export type ToolSnapshot = z.infer<typeof ToolSnapshot>;

/** The built-in document search tool, present from the first start. */
export const SEARCH_TOOL_ID = 1;
export const SEARCH_TOOL_IN_CODE_ID = 'SearchTool';
