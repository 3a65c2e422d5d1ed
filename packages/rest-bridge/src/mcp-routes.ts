import {
  type AppDeps,
  AppError,
  admit,
  type Context,
  createMcpServer,
  MCP_SCOPES,
  toErrorResponse,
} from '@kas/server';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import cors from 'cors';
import express, { type Request, type Response } from 'express';
import { sendError } from './errors.ts';

/** The address clients reach kas at: KAS_PUBLIC_URL, else the address this request came to. */
export function publicBaseUrl(deps: AppDeps, req: Request): string {
  if (deps.config.KAS_PUBLIC_URL) return deps.config.KAS_PUBLIC_URL.replace(/\/+$/, '');
  return `${req.protocol}://${req.get('host') ?? `localhost:${deps.config.PORT}`}`;
}

/** The MCP endpoint's URL: the resource (RFC 8707 audience) its tokens are for. */
export function mcpResourceUrl(deps: AppDeps, req: Request): string {
  return new URL(`${publicBaseUrl(deps, req)}/mcp`).href;
}

/** Where clients find the endpoint's Protected Resource Metadata (RFC 9728, the path form). */
export function resourceMetadataUrl(deps: AppDeps, req: Request): string {
  return `${publicBaseUrl(deps, req)}/.well-known/oauth-protected-resource/mcp`;
}

/** The authorization server MCP clients sign in at: kas itself, or the OIDC provider when so configured. */
export function authorizationServerUrl(deps: AppDeps, req: Request): string {
  if (deps.config.KAS_MCP_AUTHORIZATION_SERVER === 'oidc' && deps.config.KAS_OIDC_ISSUER)
    return deps.config.KAS_OIDC_ISSUER;
  return publicBaseUrl(deps, req);
}

/** RFC 9728: what /mcp is, who issues its tokens and which scopes they carry. */
function protectedResourceMetadata(deps: AppDeps, req: Request): OAuthProtectedResourceMetadata {
  const base = publicBaseUrl(deps, req);
  return {
    resource: mcpResourceUrl(deps, req),
    authorization_servers: [authorizationServerUrl(deps, req)],
    scopes_supported: [...MCP_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'kas',
    resource_documentation: `${base}/api/docs`,
  };
}

interface McpRouteOptions {
  deps: AppDeps;
  createContext(req: Request, res: Response): Context;
}

/**
 * A refusal of the caller: the API's error envelope, and on a 401 the `WWW-Authenticate` challenge that
 * sends MCP clients to the metadata (and from there to sign-in).
 */
function refuse(options: McpRouteOptions, req: Request, res: Response, error: unknown) {
  const failure = toErrorResponse(error);
  if (failure.status === 401 || failure.status === 403) {
    const code =
      failure.status === 403 ? 'insufficient_scope' : req.headers.authorization ? 'invalid_token' : '';
    const parts = [
      ...(code ? [`error="${code}"`, `error_description="${failure.detail.replace(/["\\]/g, '')}"`] : []),
      `resource_metadata="${resourceMetadataUrl(options.deps, req)}"`,
    ];
    res.setHeader('WWW-Authenticate', `Bearer ${parts.join(', ')}`);
  }
  sendError(res, error, options.deps.logger);
}

/**
 * One MCP request (Streamable HTTP, stateless): the caller is authenticated and counted exactly as a
 * procedure's caller is (`admit`), then a server holding only the tools they may use answers this one
 * request. No session lives in the process, so any kas process serves any request.
 */
async function handleMcp(options: McpRouteOptions, req: Request, res: Response) {
  const ctx = options.createContext(req, res);
  ctx.req.resource = mcpResourceUrl(options.deps, req);
  let actor: Awaited<ReturnType<typeof admit>>;
  try {
    actor = await admit(ctx, 'limited');
  } catch (error) {
    refuse(options, req, res, error);
    return;
  }
  const server = createMcpServer({ ...options.deps, actor });
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    sendError(res, error, options.deps.logger);
  }
}

/**
 * `/mcp`: POST carries JSON-RPC; a stateless server offers no stream to GET and no session to DELETE
 * (405, as the Streamable HTTP transport specifies).
 */
export function createMcpRouter(options: McpRouteOptions): express.Router {
  const router = express.Router();
  // Browser-based clients (the MCP Inspector, web apps) call /mcp and read the metadata from other
  // origins; credentials travel in the Authorization header only, never in cookies.
  const anyOrigin = cors({
    origin: '*',
    allowedHeaders: [
      'authorization',
      'content-type',
      'mcp-protocol-version',
      'mcp-session-id',
      'last-event-id',
    ],
    exposedHeaders: ['WWW-Authenticate', 'mcp-session-id', 'mcp-protocol-version'],
    maxAge: 600,
  });
  router.use(['/mcp', '/.well-known/oauth-protected-resource'], anyOrigin);
  router.get(
    ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'],
    (req, res) => {
      res.json(protectedResourceMetadata(options.deps, req));
    },
  );
  const json = express.json({ limit: `${options.deps.config.KAS_MAX_BODY_MB}mb` });
  router.post('/mcp', json, (req, res) => handleMcp(options, req, res));
  router.all('/mcp', (req, res) => {
    res.setHeader('Allow', 'POST');
    sendError(
      res,
      new AppError(
        'METHOD_NOT_ALLOWED',
        `${req.method} is not supported on /mcp: this server is stateless (POST only)`,
      ),
      options.deps.logger,
    );
  });
  // A body that cannot be read (not JSON, too large) is answered with the API's envelope.
  router.use('/mcp', (error: unknown, _req: Request, res: Response, _next: express.NextFunction) => {
    sendError(res, error, options.deps.logger);
  });
  return router;
}
