import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Outbound } from '../../outbound/outbound.ts';
import type { McpTransport } from '../actions.table.ts';

export interface McpToolInfo {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** Headers merged into every request of a transport, through the outbound guard. */
function guardedFetch(outbound: Outbound, headers: Record<string, string>) {
  // Streams (SSE, the Streamable HTTP GET stream) stay open: no total time cap on them.
  const fetch = outbound.withLimits({ totalTimeoutMs: 0, retries: 0 });
  return (input: string | URL | Request, init?: RequestInit) => {
    const merged = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) merged.set(k, v);
    return fetch(input, { ...init, headers: merged });
  };
}

/**
 * Connects to an MCP server, runs `fn` and closes. Streamable HTTP first; when the server does not
 * speak it (an older SSE-only server), the SSE transport, as the MCP specification's fallback says.
 */
export async function withMcpClient<T>(
  outbound: Outbound,
  server: { server_url: string; transport: McpTransport },
  headers: Record<string, string>,
  timeoutMs: number,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const url = new URL(server.server_url);
  const fetch = guardedFetch(outbound, headers);
  // The MCP SDK (~28 MB) loads with the first MCP call, not when kas starts.
  const [{ Client }, { SSEClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const connect = async (kind: McpTransport) => {
    const client = new Client({ name: 'kas', version: '0.1.0' });
    const transport =
      kind === 'STREAMABLE_HTTP'
        ? new StreamableHTTPClientTransport(url, { fetch })
        : new SSEClientTransport(url, { fetch, eventSourceInit: { fetch } });
    await client.connect(transport, { timeout: timeoutMs });
    return client;
  };
  let client: Client;
  if (server.transport === 'SSE') client = await connect('SSE');
  else {
    try {
      client = await connect('STREAMABLE_HTTP');
    } catch (error) {
      if (isAuthFailure(error)) throw error;
      client = await connect('SSE').catch(() => {
        throw error;
      });
    }
  }
  try {
    return await fn(client);
  } finally {
    await client.close().catch(() => {});
  }
}

/** Whether an MCP transport error is the server refusing the credentials (HTTP 401/403). */
export function isAuthFailure(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  const message = String((error as Error)?.message ?? '');
  return code === 401 || code === 403 || /\b(401|403)\b|Unauthorized|Forbidden/i.test(message);
}

export async function listMcpTools(client: Client, timeoutMs: number): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
    for (const t of page.tools)
      tools.push({
        name: t.name,
        description: t.description ?? '',
        input_schema: (t.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
      });
    cursor = page.nextCursor;
  } while (cursor && tools.length < 1000);
  return tools;
}

/** An MCP tool result as one value: structured content, or the text blocks joined by blank lines. */
export function mcpResultData(result: Record<string, unknown>): { data: unknown; isError: boolean } {
  const isError = result.isError === true;
  if (result.structuredContent !== undefined) return { data: result.structuredContent, isError };
  const content = Array.isArray(result.content) ? (result.content as Array<Record<string, unknown>>) : [];
  const text = content
    .map((c) => (c.type === 'text' && typeof c.text === 'string' ? c.text : JSON.stringify(c)))
    .join('\n\n');
  return { data: text, isError };
}
