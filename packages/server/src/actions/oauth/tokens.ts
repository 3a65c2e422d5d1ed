import type { OutboundFetch } from '../../outbound/outbound.ts';

/** What a token endpoint answered, as stored (encrypted) per user. */
export interface StoredToken {
  access_token: string;
  refresh_token?: string | undefined;
  token_type?: string | undefined;
  scope?: string | undefined;
}

export class TokenEndpointError extends Error {}

/** How long before expiry a token is refreshed rather than used. */
export const REFRESH_MARGIN_MS = 60_000;

/**
 * Posts a form to an OAuth token endpoint (code exchange or refresh) through the outbound guard.
 * Client credentials go in the body (client_secret_post), which the providers we target accept.
 */
export async function tokenRequest(
  fetch: OutboundFetch,
  tokenUrl: string,
  form: Record<string, string | undefined>,
): Promise<{ token: StoredToken; expiresAt: Date | null }> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) if (v !== undefined && v !== '') body.set(k, v);
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: body.toString(),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // No JSON: reported below as a refusal.
  }
  if (!response.ok || typeof json.access_token !== 'string') {
    const reason = typeof json.error === 'string' ? json.error : `HTTP ${response.status}`;
    throw new TokenEndpointError(`The token endpoint refused the request (${reason})`);
  }
  const expiresIn = Number(json.expires_in);
  return {
    token: {
      access_token: json.access_token,
      refresh_token: typeof json.refresh_token === 'string' ? json.refresh_token : form.refresh_token,
      token_type: typeof json.token_type === 'string' ? json.token_type : undefined,
      scope: typeof json.scope === 'string' ? json.scope : undefined,
    },
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(Date.now() + expiresIn * 1000) : null,
  };
}
