import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ActorContext } from '../context.ts';
import { toErrorResponse } from '../errors.ts';
import {
  McpAskInput,
  McpAskOutput,
  McpFetchInput,
  McpFetchOutput,
  McpIngestInput,
  McpIngestOutput,
  McpSearchInput,
  McpSearchOutput,
} from './mcp.schemas.ts';
import * as mcpService from './mcp.service.ts';

/** The name and version kas announces to MCP clients. */
const SERVER_INFO = { name: 'kas', title: 'kas knowledge base', version: '1.0.0' };

const INSTRUCTIONS =
  "kas is the organisation's knowledge base: documents from its connected sources (wikis, drives, " +
  'repositories, chats) and those ingested through its API, each visible only to the people allowed to ' +
  'see it. Use `search` to find documents and `fetch` to read one whole; use `ask` for a written answer ' +
  'with numbered citations. Cite the `url` of the documents you use.';

/**
 * A tool's answer: the result as structured content, and the same JSON as text for clients that read
 * only text (the `search`/`fetch` convention of ChatGPT connectors and deep-research clients).
 */
function result(value: Record<string, unknown>, text = JSON.stringify(value)): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: value };
}

/**
 * Runs a tool: an error becomes a tool error (`isError`) carrying the API's error code and detail, the
 * same words a REST caller gets; an unexpected one is logged and reported with the fixed detail.
 */
async function run(
  ctx: ActorContext<'logger'>,
  tool: string,
  call: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await call();
  } catch (error) {
    const failure = toErrorResponse(error);
    if (failure.error_code === 'INTERNAL_ERROR') ctx.logger.error({ err: error, tool }, 'MCP tool failed');
    return { content: [{ type: 'text', text: `${failure.error_code}: ${failure.detail}` }], isError: true };
  }
}

function askText(answer: McpAskOutput): string {
  if (!answer.sources.length) return answer.answer;
  const sources = answer.sources.map((s) => `[${s.n}] ${s.title}${s.url ? ` — ${s.url}` : ''} (id: ${s.id})`);
  return `${answer.answer}\n\nSources:\n${sources.join('\n')}`;
}

/**
 * The MCP server for one request's caller, with the tools they may use (by role, and for an OAuth
 * token by its scopes) and nothing else: a tool the caller cannot use is not listed, and calling it
 * is "not found". Stateless: built per request, so any kas process answers any request.
 */
export function createMcpServer(ctx: ActorContext): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
  });
  const { actor } = ctx;
  if (mcpService.mayUseTool(actor, 'search'))
    server.registerTool(
      'search',
      {
        title: 'Search the knowledge base',
        description:
          'Searches the documents the signed-in person may see (keyword search with web-search syntax) and ' +
          'returns the best-matching documents, one result per document: its id, title, url and the ' +
          'best-matching excerpt. Use `fetch` with a result id to read the whole document.',
        inputSchema: McpSearchInput,
        outputSchema: McpSearchOutput,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      (input) => run(ctx, 'search', async () => result(await mcpService.search({ ctx, input }))),
    );
  if (mcpService.mayUseTool(actor, 'fetch'))
    server.registerTool(
      'fetch',
      {
        title: 'Read a document',
        description:
          'Returns the full text of one document by its id (from `search` results or `ask` sources), with its ' +
          'title, url and metadata. A document the person may not see is reported as not found.',
        inputSchema: McpFetchInput,
        outputSchema: McpFetchOutput,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      (input) => run(ctx, 'fetch', async () => result(await mcpService.fetchDocument({ ctx, input }))),
    );
  if (mcpService.mayUseTool(actor, 'ask'))
    server.registerTool(
      'ask',
      {
        title: 'Ask the knowledge base',
        description:
          "Answers a question from the organisation's documents the person may see, as kas's chat does, with " +
          '[n] citation markers and the list of sources (id, title, url) they point at. The exchange is saved ' +
          "in the person's kas chat history. Slower than `search`: use it for a written answer.",
        inputSchema: McpAskInput,
        outputSchema: McpAskOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
      },
      (input) =>
        run(ctx, 'ask', async () => {
          const answer = await mcpService.ask({ ctx, input });
          return result(answer, askText(answer));
        }),
    );
  if (mcpService.mayUseTool(actor, 'ingest'))
    server.registerTool(
      'ingest',
      {
        title: 'Add or update a document',
        description:
          'Adds a document to the knowledge base, or replaces the document with the same id (unchanged content ' +
          'is left alone). `document` takes `semantic_identifier` (its title), `sections` (`[{text, link?}]`), ' +
          'and optionally `id`, `source`, `metadata`, `doc_updated_at`. Curators and admins only. Returns the ' +
          'document id and whether it existed before.',
        inputSchema: McpIngestInput,
        outputSchema: McpIngestOutput,
        annotations: {
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
      (input) => run(ctx, 'ingest', async () => result(await mcpService.ingest({ ctx, input }))),
    );
  return server;
}
