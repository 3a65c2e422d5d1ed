import { createHash, randomBytes } from 'node:crypto';
import type { z } from 'zod';
import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import * as actionsRepository from '../actions.repository.ts';
import type {
  OAuthCallbackInput,
  OAuthConfigCreateInput,
  OAuthConfigSnapshot,
  OAuthConfigUpdateInput,
} from '../actions.schemas.ts';
import { TokenEndpointError, tokenRequest } from '../oauth/tokens.ts';

type Deps = ServiceContext<'db' | 'secrets' | 'outbound' | 'config' | 'logger'>;

const STATE_TTL_MS = 10 * 60_000;

/** The redirect URI to register with the provider: the caller's browser lands there with `code` and `state`. */
export function redirectUri(config: Deps['config']): string {
  const base = (config.KAS_PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  return `${base}/oauth-config/callback`;
}

function scopesOf(scopes: string[] | string | undefined): string[] {
  if (scopes === undefined) return [];
  const list = Array.isArray(scopes) ? scopes : scopes.split(',');
  return list.map((s) => s.trim()).filter(Boolean);
}

async function snapshotOf(ctx: Deps, id: number): Promise<OAuthConfigSnapshot> {
  const row = (await actionsRepository.listOauthConfigs(ctx.db)).find((r) => r.id === id);
  if (!row) throw new AppError('OAUTH_CONFIG_NOT_FOUND', `OAuth configuration ${id} not found`);
  return toSnapshot(ctx, row);
}

function toSnapshot(
  ctx: Deps,
  row: Awaited<ReturnType<typeof actionsRepository.listOauthConfigs>>[number],
): OAuthConfigSnapshot {
  return {
    id: row.id,
    name: row.name,
    authorization_url: row.authorization_url,
    token_url: row.token_url,
    scopes: row.scopes,
    has_client_credentials: true,
    tool_count: Number(row.tool_count ?? 0),
    redirect_uri: redirectUri(ctx.config),
  };
}

export async function createOauthConfig({
  ctx,
  input,
}: {
  ctx: Deps;
  input: z.infer<typeof OAuthConfigCreateInput>;
}) {
  const { id } = await actionsRepository.insertOauthConfig(ctx.db, {
    name: input.name,
    authorization_url: input.authorization_url,
    token_url: input.token_url,
    client_id_enc: ctx.secrets.encrypt(input.client_id),
    client_secret_enc: ctx.secrets.encrypt(input.client_secret),
    scopes: JSON.stringify(scopesOf(input.scopes)),
  });
  return snapshotOf(ctx, id);
}

export async function listOauthConfigs({ ctx }: { ctx: Deps }) {
  return (await actionsRepository.listOauthConfigs(ctx.db)).map((r) => toSnapshot(ctx, r));
}

export async function getOauthConfig({ ctx, id }: { ctx: Deps; id: number }) {
  return snapshotOf(ctx, id);
}

export async function updateOauthConfig({
  ctx,
  input,
}: {
  ctx: Deps;
  input: z.infer<typeof OAuthConfigUpdateInput>;
}) {
  const current = await snapshotOf(ctx, input.oauth_config_id);
  // The client secret, and each user's refresh token, are sent to the token endpoint: they are bound
  // to its origin. Moving it needs the secret given again, and users connect again.
  const moved =
    input.token_url !== undefined && new URL(input.token_url).origin !== new URL(current.token_url).origin;
  if (moved && input.client_secret === undefined)
    throw new AppError(
      'SECRET_REENTRY_REQUIRED',
      `token_url moves OAuth configuration ${current.id} from ${new URL(current.token_url).origin} to ${new URL(input.token_url as string).origin}, ` +
        'but its client_secret was entered for the former: give client_secret again with this change',
    );
  await actionsRepository.updateOauthConfig(ctx.db, input.oauth_config_id, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.authorization_url !== undefined ? { authorization_url: input.authorization_url } : {}),
    ...(input.token_url !== undefined ? { token_url: input.token_url } : {}),
    ...(input.client_id !== undefined ? { client_id_enc: ctx.secrets.encrypt(input.client_id) } : {}),
    ...(input.client_secret !== undefined
      ? { client_secret_enc: ctx.secrets.encrypt(input.client_secret) }
      : {}),
    ...(input.scopes !== undefined ? { scopes: JSON.stringify(scopesOf(input.scopes)) } : {}),
  });
  if (moved) await actionsRepository.deleteUserTokensOf(ctx.db, current.id);
  return snapshotOf(ctx, input.oauth_config_id);
}

/** Deletes a configuration and every user's token for it; 400 while an action still uses it. */
export async function deleteOauthConfig({ ctx, id }: { ctx: Deps; id: number }) {
  const snapshot = await snapshotOf(ctx, id);
  if (snapshot.tool_count > 0)
    throw new AppError(
      'INVALID_INPUT',
      `OAuth configuration ${id} is used by ${snapshot.tool_count} action(s): change or delete them first`,
    );
  await actionsRepository.deleteOauthConfig(ctx.db, id);
  return { success: true as const };
}

/** Starts the caller's own connection: an authorization URL with PKCE (S256) and a one-time state. */
export async function initiateOauth({ ctx, configId }: { ctx: Deps & { actor: Actor }; configId: number }) {
  const { actor } = ctx;
  const config = await actionsRepository.findOauthConfig(ctx.db, configId);
  if (!config) throw new AppError('OAUTH_CONFIG_NOT_FOUND', `OAuth configuration ${configId} not found`);
  const state = randomBytes(24).toString('base64url');
  const verifier = randomBytes(48).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const redirect = redirectUri(ctx.config);
  await actionsRepository.insertOauthState(ctx.db, {
    state,
    user_id: actor.user_id,
    oauth_config_id: configId,
    mcp_server_id: null,
    data_enc: ctx.secrets.encrypt(JSON.stringify({ verifier, redirect_uri: redirect })),
    expires_at: new Date(Date.now() + STATE_TTL_MS),
  });
  const url = new URL(config.authorization_url);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', ctx.secrets.decrypt(config.client_id_enc));
  url.searchParams.set('redirect_uri', redirect);
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  if (config.scopes.length) url.searchParams.set('scope', config.scopes.join(' '));
  return { authorization_url: url.toString(), state, redirect_uri: redirect };
}

/** Exchanges the code for the caller's token and stores it encrypted, for the user who started the flow only. */
export async function oauthCallback({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: z.infer<typeof OAuthCallbackInput>;
}) {
  const { actor } = ctx;
  const row = await actionsRepository.takeOauthState(ctx.db, input.state);
  if (!row || row.oauth_config_id === null || new Date(row.expires_at).getTime() < Date.now())
    throw new AppError(
      'INVALID_INPUT',
      'Unknown or expired OAuth state: start again with /api/oauth-config/initiate',
    );
  if (row.user_id !== actor.user_id)
    throw new AppError('INVALID_INPUT', 'This OAuth state was issued to another user');
  const config = await actionsRepository.findOauthConfig(ctx.db, row.oauth_config_id);
  if (!config)
    throw new AppError('OAUTH_CONFIG_NOT_FOUND', `OAuth configuration ${row.oauth_config_id} not found`);
  const data = JSON.parse(ctx.secrets.decrypt(row.data_enc)) as { verifier: string; redirect_uri: string };
  try {
    const { token, expiresAt } = await tokenRequest(ctx.outbound.fetch, config.token_url, {
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: data.redirect_uri,
      code_verifier: data.verifier,
      client_id: ctx.secrets.decrypt(config.client_id_enc),
      client_secret: ctx.secrets.decrypt(config.client_secret_enc),
    });
    await actionsRepository.upsertUserToken(ctx.db, {
      oauth_config_id: config.id,
      user_id: actor.user_id,
      token_enc: ctx.secrets.encrypt(JSON.stringify(token)),
      expires_at: expiresAt,
    });
  } catch (error) {
    if (error instanceof TokenEndpointError) throw new AppError('INVALID_INPUT', error.message);
    throw new AppError('INVALID_INPUT', `The token endpoint of ${config.name} could not be reached`, {
      cause: error,
    });
  }
  return { success: true, oauth_config_id: config.id, message: `Connected to ${config.name}` };
}

export async function disconnectOauth({ ctx, configId }: { ctx: Deps & { actor: Actor }; configId: number }) {
  const { actor } = ctx;
  if (!(await actionsRepository.deleteUserToken(ctx.db, configId, actor.user_id)))
    throw new AppError('NOT_FOUND', `You are not connected to OAuth configuration ${configId}`);
  return { success: true as const };
}
