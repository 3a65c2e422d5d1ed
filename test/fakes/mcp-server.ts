import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface FakeMcpServer {
  /** The MCP endpoint (Streamable HTTP). */
  url: string;
  /** Headers of every HTTP request received. */
  requests: IncomingHttpHeaders[];
  /** Which caller made each tool call (the `who` the authorizer returned). */
  calls: Array<{ tool: string; who: string; args: unknown }>;
  close(): Promise<void>;
}

/**
 * An MCP server built with the MCP SDK's own server classes (stateless Streamable HTTP), with two
 * tools. `authorize` decides from the request headers who calls (any string) or refuses (null → 401),
 * so one instance stands for each authentication method.
 */
export async function startFakeMcpServer(
  options: {
    name?: string;
    authorize?: (headers: IncomingHttpHeaders) => string | null | Promise<string | null>;
    /** `WWW-Authenticate` value sent with a 401 (e.g. naming the protected-resource metadata). */
    challenge?: (url: string) => string;
    /** Extra GET routes (e.g. `/.well-known/oauth-protected-resource/mcp`), answered as JSON without authorization. */
    routes?: Record<string, (url: string) => unknown>;
  } = {},
): Promise<FakeMcpServer> {
  const requests: IncomingHttpHeaders[] = [];
  const calls: FakeMcpServer['calls'] = [];
  const authorize = options.authorize ?? (() => 'anyone');
  const server: Server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const route = req.method === 'GET' ? options.routes?.[path] : undefined;
    if (route) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(route(url)));
      return;
    }
    requests.push(req.headers);
    const who = await authorize(req.headers);
    if (who === null) {
      res
        .writeHead(401, {
          'content-type': 'application/json',
          ...(options.challenge ? { 'www-authenticate': options.challenge(url) } : {}),
        })
        .end('{"error":"invalid_token"}');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const mcp = new McpServer({ name: options.name ?? 'fake-mcp', version: '1.0.0' });
    mcp.registerTool(
      'add',
      { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
      async ({ a, b }) => {
        calls.push({ tool: 'add', who, args: { a, b } });
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
    mcp.registerTool(
      'whoami',
      { description: 'Tells who the server thinks is calling', inputSchema: {} },
      async () => {
        calls.push({ tool: 'whoami', who, args: {} });
        return { content: [{ type: 'text', text: `You are ${who}` }] };
      },
    );
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  let url = '';
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return {
    url,
    requests,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * An MCP server that speaks only the legacy HTTP+SSE transport (the SDK's `SSEServerTransport`):
 * `GET /sse` opens the event stream, whose first event names `/messages?sessionId=…` for the
 * client's POSTs. A Streamable HTTP POST to `/sse` gets 405, so clients must fall back.
 */
export async function startFakeSseMcpServer(): Promise<FakeMcpServer> {
  const requests: IncomingHttpHeaders[] = [];
  const calls: FakeMcpServer['calls'] = [];
  const sessions = new Map<string, SSEServerTransport>();
  const server: Server = createServer(async (req, res) => {
    requests.push(req.headers);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      sessions.set(transport.sessionId, transport);
      const mcp = new McpServer({ name: 'fake-sse-mcp', version: '1.0.0' });
      mcp.registerTool(
        'add',
        { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
        async ({ a, b }) => {
          calls.push({ tool: 'add', who: 'sse', args: { a, b } });
          return { content: [{ type: 'text', text: String(a + b) }] };
        },
      );
      res.on('close', () => {
        sessions.delete(transport.sessionId);
        void mcp.close();
      });
      await mcp.connect(transport);
      return;
    }
    if (req.method === 'POST' && path === '/messages') {
      const id = new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '';
      const transport = sessions.get(id);
      if (!transport) {
        res.writeHead(404).end('unknown session');
        return;
      }
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(405, { allow: 'GET' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`,
    requests,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
