import type { ServiceContext } from '../../context.ts';
import * as actionsRepository from '../actions.repository.ts';
import { REFRESH_MARGIN_MS, type StoredToken, tokenRequest } from '../oauth/tokens.ts';

type Deps = ServiceContext<'db' | 'secrets' | 'outbound' | 'logger'>;

/**
 * The user's access token for an OAuth configuration, refreshed when it expires within a minute
 * (or when `force` says the API refused it); null when the user has not connected or refresh failed.
 * Only this user's row is ever read: one user's token is never used for another.
 */
export async function userAccessToken(
  ctx: Deps,
  configId: number,
  userId: string,
  options: { force?: boolean } = {},
): Promise<string | null> {
  const row = await actionsRepository.findUserToken(ctx.db, configId, userId);
  if (!row) return null;
  const token = JSON.parse(ctx.secrets.decrypt(row.token_enc)) as StoredToken;
  const expiring =
    row.expires_at !== null && new Date(row.expires_at).getTime() - Date.now() < REFRESH_MARGIN_MS;
  if (!expiring && !options.force) return token.access_token;
  if (!token.refresh_token) return expiring ? null : token.access_token;
  const config = await actionsRepository.findOauthConfig(ctx.db, configId);
  if (!config) return null;
  try {
    const refreshed = await tokenRequest(ctx.outbound.fetch, config.token_url, {
      grant_type: 'refresh_token',
      refresh_token: token.refresh_token,
      client_id: ctx.secrets.decrypt(config.client_id_enc),
      client_secret: ctx.secrets.decrypt(config.client_secret_enc),
    });
    await actionsRepository.upsertUserToken(ctx.db, {
      oauth_config_id: configId,
      user_id: userId,
      token_enc: ctx.secrets.encrypt(JSON.stringify(refreshed.token)),
      expires_at: refreshed.expiresAt,
    });
    return refreshed.token.access_token;
  } catch (error) {
    ctx.logger.warn({ err: error, oauth_config_id: configId }, 'refreshing an OAuth token failed');
    return null;
  }
}
