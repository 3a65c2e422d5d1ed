import type { ServiceContext } from '../context.ts';
import { AppError } from '../errors.ts';

type Deps = ServiceContext<'config' | 'outbound'>;

interface ProviderEndpoints {
  authorization_endpoint: string;
  token_endpoint: string;
}

/** The provider's endpoints, from its discovery document (read at each sign-in: they are rare). */
async function endpoints(ctx: Deps): Promise<ProviderEndpoints> {
  const issuer = ctx.config.KAS_OIDC_ISSUER;
  if (!issuer) throw new AppError('NOT_FOUND', 'No sign-in provider is configured (KAS_OIDC_ISSUER)');
  const unavailable = (cause?: unknown) =>
    new AppError('SERVICE_UNAVAILABLE', 'The sign-in provider could not be reached; try again', { cause });
  let metadata: Partial<ProviderEndpoints> & { issuer?: string };
  try {
    const res = await ctx.outbound.fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
    if (!res.ok) throw new Error(`discovery answered ${res.status}`);
    metadata = (await res.json()) as typeof metadata;
  } catch (error) {
    throw unavailable(error);
  }
  if (metadata.issuer !== issuer || !metadata.authorization_endpoint || !metadata.token_endpoint)
    throw unavailable(new Error('incomplete discovery document'));
  return { authorization_endpoint: metadata.authorization_endpoint, token_endpoint: metadata.token_endpoint };
}

/**
 * Where to send a person to sign in at the OIDC provider (authorization code with PKCE S256), as the
 * client KAS_OIDC_AUDIENCE names, to come back to `redirectUri` with `state`.
 */
export async function oidcAuthorizationUrl({
  ctx,
  redirectUri,
  state,
  codeChallenge,
}: {
  ctx: Deps;
  redirectUri: string;
  state: string;
  codeChallenge: string;
}): Promise<string> {
  const { authorization_endpoint } = await endpoints(ctx);
  const url = new URL(authorization_endpoint);
  for (const [name, value] of Object.entries({
    client_id: ctx.config.KAS_OIDC_AUDIENCE ?? '',
    response_type: 'code',
    scope: 'openid email',
    redirect_uri: redirectUri,
    state,
    code_challenge: codeChallenge,
    code_challenge_method: 'S256',
  }))
    url.searchParams.set(name, value);
  return url.href;
}

/**
 * The code the provider sent back, exchanged for the person's ID token (which the caller then verifies
 * as any OIDC bearer token is verified). A public client unless KAS_OIDC_CLIENT_SECRET is set.
 */
export async function oidcIdToken({
  ctx,
  code,
  redirectUri,
  codeVerifier,
}: {
  ctx: Deps;
  code: string;
  redirectUri: string;
  codeVerifier: string;
}): Promise<string> {
  const { token_endpoint } = await endpoints(ctx);
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    client_id: ctx.config.KAS_OIDC_AUDIENCE ?? '',
    code_verifier: codeVerifier,
  });
  if (ctx.config.KAS_OIDC_CLIENT_SECRET) form.set('client_secret', ctx.config.KAS_OIDC_CLIENT_SECRET);
  const res = await ctx.outbound.fetch(token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: form,
  });
  const body = (await res.json().catch(() => ({}))) as { id_token?: unknown; error?: unknown };
  if (!res.ok || typeof body.id_token !== 'string')
    throw new AppError(
      'UNAUTHENTICATED',
      `The sign-in provider refused the sign-in${typeof body.error === 'string' ? ` (${body.error})` : ''}; try again`,
    );
  return body.id_token;
}
