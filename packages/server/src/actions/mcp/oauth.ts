import {
  discoverOAuthServerInfo,
  exchangeAuthorization,
  extractWWWAuthenticateParams,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import type { OutboundFetch } from '../../outbound/outbound.ts';

export type { OAuthClientInformationMixed, OAuthTokens };

/** Where and how an MCP server's users authorize kas: what discovery found. */
export interface McpAuthDiscovery {
  authorization_server_url: string;
  metadata: AuthorizationServerMetadata;
  /** The RFC 8707 resource indicator from the protected-resource metadata, sent verbatim. */
  resource?: string | undefined;
  scope?: string | undefined;
}

/** Discovery failed or the authorization server cannot be used; `message` is safe to show. */
export class McpOAuthError extends Error {}

function reason(error: unknown): string {
  const code = (error as { errorCode?: unknown })?.errorCode;
  return typeof code === 'string' ? code : 'unexpected answer';
}

/**
 * Finds the MCP server's authorization server: an unauthenticated request's 401 may name the
 * protected-resource metadata (`WWW-Authenticate: … resource_metadata=…`, RFC 9728); otherwise the
 * well-known URL is tried. Then the authorization server's metadata (RFC 8414, or OIDC discovery).
 * All through the SDK's helpers with our guarded fetch.
 */
export async function discoverMcpAuthorization(
  fetch: OutboundFetch,
  serverUrl: string,
): Promise<McpAuthDiscovery> {
  let resourceMetadataUrl: URL | undefined;
  let challengeScope: string | undefined;
  // The SDK's types module (~16 MB with its schemas) loads with the first MCP use, not at start-up.
  const { LATEST_PROTOCOL_VERSION } = await import('@modelcontextprotocol/sdk/types.js');
  try {
    const probe = await fetch(serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'kas', version: '0.1.0' },
        },
      }),
    });
    if (probe.status === 401) {
      const params = extractWWWAuthenticateParams(probe);
      resourceMetadataUrl = params.resourceMetadataUrl;
      challengeScope = params.scope;
    }
    await probe.body?.cancel().catch(() => {});
  } catch {
    // Unreachable now: the well-known lookups below report it.
  }
  let info: Awaited<ReturnType<typeof discoverOAuthServerInfo>>;
  try {
    info = await discoverOAuthServerInfo(serverUrl, {
      ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}),
      fetchFn: fetch,
    });
  } catch (error) {
    throw new McpOAuthError(
      `Could not read the OAuth metadata of the MCP server at ${serverUrl} or its authorization server`,
      { cause: error },
    );
  }
  if (!info.authorizationServerMetadata)
    throw new McpOAuthError(
      `The authorization server ${info.authorizationServerUrl} of the MCP server at ${serverUrl} publishes no OAuth metadata`,
    );
  const resource = info.resourceMetadata?.resource;
  if (resource && !checkResourceAllowed({ requestedResource: serverUrl, configuredResource: resource }))
    throw new McpOAuthError(
      `The MCP server at ${serverUrl} names another resource (${resource}) in its protected-resource metadata`,
    );
  return {
    authorization_server_url: info.authorizationServerUrl,
    metadata: info.authorizationServerMetadata,
    resource,
    scope: challengeScope ?? info.resourceMetadata?.scopes_supported?.join(' '),
  };
}

/** Dynamic client registration (RFC 7591) of kas with the authorization server. */
export async function registerMcpClient(
  fetch: OutboundFetch,
  discovery: McpAuthDiscovery,
  redirectUri: string,
): Promise<OAuthClientInformationMixed> {
  if (!discovery.metadata.registration_endpoint)
    throw new McpOAuthError(
      `The authorization server ${discovery.authorization_server_url} does not offer dynamic client registration: give the server an oauth_client_id`,
    );
  try {
    return await registerClient(discovery.authorization_server_url, {
      metadata: discovery.metadata,
      clientMetadata: {
        client_name: 'kas',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        ...(discovery.scope ? { scope: discovery.scope } : {}),
      },
      fetchFn: fetch,
    });
  } catch (error) {
    throw new McpOAuthError(
      `The authorization server ${discovery.authorization_server_url} refused to register kas (${reason(error)})`,
      { cause: error },
    );
  }
}

/** The authorization URL (PKCE S256, our state) and the verifier to keep until the callback. */
export async function authorizationRequest(
  discovery: McpAuthDiscovery,
  client: OAuthClientInformationMixed,
  redirectUri: string,
  state: string,
): Promise<{ url: string; verifier: string }> {
  try {
    const { authorizationUrl, codeVerifier } = await startAuthorization(discovery.authorization_server_url, {
      metadata: discovery.metadata,
      clientInformation: client,
      redirectUrl: redirectUri,
      state,
      ...(discovery.scope ? { scope: discovery.scope } : {}),
      ...(discovery.resource ? { resource: discovery.resource } : {}),
    });
    return { url: authorizationUrl.toString(), verifier: codeVerifier };
  } catch (error) {
    throw new McpOAuthError(
      `The authorization server ${discovery.authorization_server_url} cannot be used: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

export async function exchangeCode(
  fetch: OutboundFetch,
  discovery: McpAuthDiscovery,
  client: OAuthClientInformationMixed,
  args: { code: string; verifier: string; redirectUri: string },
): Promise<OAuthTokens> {
  try {
    return await exchangeAuthorization(discovery.authorization_server_url, {
      metadata: discovery.metadata,
      clientInformation: client,
      authorizationCode: args.code,
      codeVerifier: args.verifier,
      redirectUri: args.redirectUri,
      ...(discovery.resource ? { resource: discovery.resource } : {}),
      fetchFn: fetch,
    });
  } catch (error) {
    throw new McpOAuthError(`The authorization server refused the code (${reason(error)})`, {
      cause: error,
    });
  }
}

export async function refreshTokens(
  fetch: OutboundFetch,
  discovery: McpAuthDiscovery,
  client: OAuthClientInformationMixed,
  refreshToken: string,
): Promise<OAuthTokens> {
  return refreshAuthorization(discovery.authorization_server_url, {
    metadata: discovery.metadata,
    clientInformation: client,
    refreshToken,
    ...(discovery.resource ? { resource: discovery.resource } : {}),
    fetchFn: fetch,
  });
}
