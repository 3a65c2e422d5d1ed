import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { McpServerRow } from '../actions.repository.ts';
import * as actionsRepository from '../actions.repository.ts';
import type {
  McpOauthCallbackResponse,
  McpOauthConnectInput,
  McpOauthConnectResponse,
} from '../actions.schemas.ts';
import {
  authorizationRequest,
  discoverMcpAuthorization,
  exchangeCode,
  type McpAuthDiscovery,
  McpOAuthError,
  type OAuthClientInformationMixed,
  type OAuthTokens,
  refreshTokens,
  registerMcpClient,
} from '../mcp/oauth.ts';
import { REFRESH_MARGIN_MS } from '../oauth/tokens.ts';
import { usableServer } from './mcp-access.ts';

type Deps = ServiceContext<'db' | 'secrets' | 'outbound' | 'config' | 'logger'>;

const STATE_TTL_MS = 10 * 60_000;

/** One user's OAuth grant for one MCP server, stored encrypted in their `mcp_user_configs` row. */
export interface McpOauthGrant {
  tokens: OAuthTokens;
  /** Epoch ms; null when the authorization server gave no `expires_in`. */
  expires_at: number | null;
  discovery: McpAuthDiscovery;
  client: OAuthClientInformationMixed;
}

interface StateData {
  verifier: string;
  redirect_uri: string;
  discovery: McpAuthDiscovery;
  client: OAuthClientInformationMixed;
}

/** The redirect URI kas registers (or the admin registers) with the MCP server's authorization server. */
export function mcpRedirectUri(config: Deps['config']): string {
  const base = (config.KAS_PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  return `${base}/mcp/oauth/callback`;
}

function adminOauthClient(ctx: Deps, row: McpServerRow): OAuthClientInformationMixed | null {
  if (!row.admin_config_enc) return null;
  const config = JSON.parse(ctx.secrets.decrypt(row.admin_config_enc)) as {
    oauth_client_id?: string;
    oauth_client_secret?: string;
  };
  return config.oauth_client_id
    ? {
        client_id: config.oauth_client_id,
        ...(config.oauth_client_secret ? { client_secret: config.oauth_client_secret } : {}),
      }
    : null;
}

async function readGrant(ctx: Deps, serverId: number, userId: string): Promise<McpOauthGrant | null> {
  const row = await actionsRepository.findMcpUserConfig(ctx.db, serverId, userId);
  if (!row) return null;
  return (JSON.parse(ctx.secrets.decrypt(row.config_enc)) as { oauth?: McpOauthGrant }).oauth ?? null;
}

async function saveGrant(
  ctx: Deps,
  serverId: number,
  userId: string,
  grant: Omit<McpOauthGrant, 'expires_at'>,
): Promise<void> {
  const expiresIn = Number(grant.tokens.expires_in);
  const stored: McpOauthGrant = {
    ...grant,
    expires_at: Number.isFinite(expiresIn) && expiresIn > 0 ? Date.now() + expiresIn * 1000 : null,
  };
  await actionsRepository.upsertMcpUserConfig(
    ctx.db,
    serverId,
    userId,
    ctx.secrets.encrypt(JSON.stringify({ oauth: stored })),
  );
}

/**
 * The user's access token for an OAuth MCP server: refreshed when it expires within a minute, or when
 * the server just refused `rejected` (unless another request already replaced it). Null when the user
 * has not connected, or the token expired and could not be refreshed. Reads this user's row only.
 */
export async function mcpOauthAccessToken(
  ctx: Deps,
  row: McpServerRow,
  userId: string,
  options: { rejected?: string | undefined } = {},
): Promise<string | null> {
  const grant = await readGrant(ctx, row.id, userId);
  if (!grant) return null;
  const current = grant.tokens.access_token;
  if (options.rejected !== undefined && current !== options.rejected) return current;
  const expiring = grant.expires_at !== null && grant.expires_at - Date.now() < REFRESH_MARGIN_MS;
  if (!expiring && options.rejected === undefined) return current;
  const refreshToken = grant.tokens.refresh_token;
  if (!refreshToken)
    return options.rejected === undefined && grant.expires_at !== null && grant.expires_at > Date.now()
      ? current
      : null;
  try {
    const tokens = await refreshTokens(ctx.outbound.fetch, grant.discovery, grant.client, refreshToken);
    await saveGrant(ctx, row.id, userId, {
      ...grant,
      tokens: { ...tokens, refresh_token: tokens.refresh_token ?? refreshToken },
    });
    return tokens.access_token;
  } catch (error) {
    ctx.logger.warn({ err: error, mcp_server_id: row.id }, 'refreshing an MCP OAuth token failed');
    // Another request may have refreshed with the same (now used) refresh token meanwhile.
    const again = await readGrant(ctx, row.id, userId);
    return again && again.tokens.access_token !== current ? again.tokens.access_token : null;
  }
}

async function clientFor(
  ctx: Deps,
  row: McpServerRow,
  discovery: McpAuthDiscovery,
  redirectUri: string,
): Promise<OAuthClientInformationMixed> {
  const configured = adminOauthClient(ctx, row);
  if (configured) return configured;
  // Registered once per server, authorization server and redirect URI, then reused for every user.
  const admin = row.admin_config_enc
    ? (JSON.parse(ctx.secrets.decrypt(row.admin_config_enc)) as Record<string, unknown>)
    : {};
  const registered = admin.oauth_registered_client as
    | { authorization_server_url: string; redirect_uri: string; client: OAuthClientInformationMixed }
    | undefined;
  if (
    registered?.authorization_server_url === discovery.authorization_server_url &&
    registered.redirect_uri === redirectUri
  )
    return registered.client;
  const client = await registerMcpClient(ctx.outbound.fetch, discovery, redirectUri);
  await actionsRepository.updateMcpServer(ctx.db, row.id, {
    admin_config_enc: ctx.secrets.encrypt(
      JSON.stringify({
        ...admin,
        oauth_registered_client: {
          authorization_server_url: discovery.authorization_server_url,
          redirect_uri: redirectUri,
          client,
        },
      }),
    ),
  });
  return client;
}

/**
 * Starts the caller's own connection to an OAuth MCP server: discovery, dynamic client registration
 * when the admin gave no client id, then an authorization URL with PKCE (S256) and a one-time state.
 */
export async function connectMcpOauth({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: z.infer<typeof McpOauthConnectInput>;
}): Promise<z.infer<typeof McpOauthConnectResponse>> {
  const { actor } = ctx;
  const row = await usableServer(ctx, actor, input.server_id);
  if (row.auth_type !== 'OAUTH')
    throw new AppError(
      'INVALID_INPUT',
      `MCP server ${row.id} does not use OAuth (auth ${row.auth_type}): nothing to connect`,
    );
  const redirectUri = mcpRedirectUri(ctx.config);
  const base = { server_id: row.id, redirect_uri: redirectUri };
  if (!input.force_reauthentication && (await mcpOauthAccessToken(ctx, row, actor.user_id)))
    return { ...base, status: 'already_authenticated', authorization_url: null, state: null };
  try {
    const discovery = await discoverMcpAuthorization(ctx.outbound.fetch, row.server_url);
    const client = await clientFor(ctx, row, discovery, redirectUri);
    const state = randomBytes(24).toString('base64url');
    const { url, verifier } = await authorizationRequest(discovery, client, redirectUri, state);
    await actionsRepository.insertOauthState(ctx.db, {
      state,
      user_id: actor.user_id,
      oauth_config_id: null,
      mcp_server_id: row.id,
      data_enc: ctx.secrets.encrypt(
        JSON.stringify({ verifier, redirect_uri: redirectUri, discovery, client } satisfies StateData),
      ),
      expires_at: new Date(Date.now() + STATE_TTL_MS),
    });
    return { ...base, status: 'authorization_required', authorization_url: url, state };
  } catch (error) {
    if (error instanceof McpOAuthError) throw new AppError('INVALID_INPUT', error.message, { cause: error });
    throw error;
  }
}

/** Exchanges the code for the caller's tokens and stores them encrypted, for the user who started the flow only. */
export async function mcpOauthCallback({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: { code: string; state: string };
}): Promise<z.infer<typeof McpOauthCallbackResponse>> {
  const { actor } = ctx;
  const state = await actionsRepository.takeOauthState(ctx.db, input.state);
  if (!state || state.mcp_server_id === null || new Date(state.expires_at).getTime() < Date.now())
    throw new AppError(
      'INVALID_INPUT',
      'Unknown or expired OAuth state: start again with /api/mcp/oauth/connect',
    );
  if (state.user_id !== actor.user_id)
    throw new AppError('INVALID_INPUT', 'This OAuth state was issued to another user');
  const row = await actionsRepository.findMcpServer(ctx.db, state.mcp_server_id);
  if (!row) throw new AppError('MCP_SERVER_NOT_FOUND', `MCP server ${state.mcp_server_id} not found`);
  const data = JSON.parse(ctx.secrets.decrypt(state.data_enc)) as StateData;
  let tokens: OAuthTokens;
  try {
    tokens = await exchangeCode(ctx.outbound.fetch, data.discovery, data.client, {
      code: input.code,
      verifier: data.verifier,
      redirectUri: data.redirect_uri,
    });
  } catch (error) {
    if (error instanceof McpOAuthError) throw new AppError('INVALID_INPUT', error.message, { cause: error });
    throw error;
  }
  await saveGrant(ctx, row.id, actor.user_id, { tokens, discovery: data.discovery, client: data.client });
  return {
    success: true,
    message: `Connected to MCP server "${row.name}"`,
    server_id: row.id,
    server_name: row.name,
  };
}
