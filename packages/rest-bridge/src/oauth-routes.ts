import { createHash, randomBytes } from 'node:crypto';
import {
  type AppDeps,
  AppError,
  authorize,
  createInnerContext,
  OAuthProtocolError,
  oauthServerService,
  oidcSignInService,
  toErrorResponse,
} from '@kas/server';
import {
  CustomOAuthError,
  InvalidTokenError,
  OAUTH_ERRORS,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { createOAuthMetadata } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import cors from 'cors';
import express, { type Request, type Response } from 'express';
import { sendError } from './errors.ts';
import { mcpResourceUrl, publicBaseUrl } from './mcp-routes.ts';

/** How long the consent page's request stays valid: time for a person to find their token. */
const CONSENT_TTL_MS = 15 * 60_000;

/** The authorization request a consent page carries, encrypted, to its form's POST. */
interface PendingRequest {
  client_id: string;
  client_name: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | undefined;
  scopes: string[];
  resource: string;
  issuer: string;
  expires_at: number;
}

/** The OAuth protocol's answer for a refusal of the service: the SDK's error of the same code. */
function asOAuthError(error: unknown): unknown {
  if (!(error instanceof OAuthProtocolError)) return error;
  const known = OAUTH_ERRORS[error.oauth_error];
  return known ? new known(error.detail) : new CustomOAuthError(error.oauth_error, error.detail);
}

async function oauthCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw asOAuthError(error);
  }
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** What a redirect URI points at, as the person should read it: its host, or the app's own scheme. */
function redirectTarget(uri: string): string {
  const url = new URL(uri);
  return url.protocol === 'http:' || url.protocol === 'https:'
    ? url.host
    : `${url.protocol}// (an app on this device)`;
}

/** The CSP source that lets the consent form's answer redirect to the client (browsers check form-action). */
function formActionSource(uri: string): string {
  const url = new URL(uri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

const SCOPE_WORDS: Record<string, string> = {
  search: 'search and read the documents you can see',
  ask: 'ask questions (the answers are saved in your kas chat history)',
  ingest: 'add and update documents where you may (curators and admins)',
};

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.4rem}.box{border:1px solid #d0d0d7;border-radius:8px;padding:1rem 1.25rem}
.error{background:#fdecec;border:1px solid #f3b4b4;border-radius:6px;padding:.5rem .75rem}
label{display:block;margin:1rem 0 .25rem;font-weight:600}input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}
button{margin:1rem .5rem 0 0;padding:.5rem 1.25rem;font-size:1rem;border-radius:6px;border:1px solid #888;cursor:pointer}
button[value=approve]{background:#1d4ed8;color:#fff;border-color:#1d4ed8}small{color:#555}
</style></head><body>${body}</body></html>`;
}

function consentPage(
  deps: AppDeps,
  pending: PendingRequest,
  sealed: string,
  base: string,
  error?: string,
): string {
  const scopes = pending.scopes.length ? pending.scopes : ['search', 'ask', 'ingest'];
  const items = scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s] ?? s)}</li>`).join('');
  const oidc = deps.config.KAS_OIDC_ISSUER
    ? ' (or a sign-in token from your organisation’s identity provider)'
    : '';
  const oidcButton = deps.config.KAS_OIDC_ISSUER
    ? `<form method="get" action="${escapeHtml(`${base}/oauth/consent/oidc`)}">
<input type="hidden" name="request" value="${escapeHtml(sealed)}">
<button type="submit">Sign in with your organisation’s account and allow</button>
</form><p><small>or with a personal access token:</small></p>`
    : '';
  return page(
    'Allow access to kas',
    `<h1>Allow <b>${escapeHtml(pending.client_name)}</b> to use kas as you?</h1>
<div class="box">
<p>It will be able to:</p><ul>${items}</ul>
<p>only within what you can already see and do in kas. After you allow it, you return to
<b>${escapeHtml(redirectTarget(pending.redirect_uri))}</b>.</p>
</div>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
${oidcButton}
<form method="post" action="${escapeHtml(`${base}/oauth/consent`)}">
<input type="hidden" name="request" value="${escapeHtml(sealed)}">
<label for="token">Your kas personal access token${escapeHtml(oidc)}</label>
<input id="token" name="token" type="password" autocomplete="off" placeholder="kpat-…">
<small>Ask an admin for one (<code>kas user token create --email you@…</code>) if you have none. It is used
once to confirm who you are; the app never sees it.</small><br>
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
<p><small>You can revoke this access at any time: <code>DELETE /api/user/oauth-grants/{id}</code>.</small></p>`,
  );
}

/**
 * A page of the sign-in. Its forms may lead only here, to the client's redirect URI and to the sign-in
 * provider (browsers apply `form-action` to the redirects that follow a form too).
 */
function sendPage(res: Response, status: number, html: string, redirectUri?: string, provider?: string) {
  const sources = [redirectUri && formActionSource(redirectUri), provider && new URL(provider).origin]
    .filter(Boolean)
    .join(' ');
  res
    .status(status)
    .setHeader('Cache-Control', 'no-store')
    .setHeader(
      'Content-Security-Policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${sources ? ` ${sources}` : ''}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .type('html')
    .send(html);
}

function redirectWith(res: Response, redirectUri: string, params: Record<string, string | undefined>) {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) url.searchParams.set(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(302, url.href);
}

const sameResource = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/**
 * kas as the OAuth 2.1 provider the MCP SDK's handlers drive: clients, codes and tokens live in the
 * database (the `oauth-server` service), so any kas process continues a flow another began. The
 * authorization step shows a consent page; access tokens are verified by kas's one credential resolver
 * (at /mcp), never here.
 */
function createProvider(deps: AppDeps): OAuthServerProvider {
  return {
    clientsStore: {
      getClient: (clientId) => oauthCall(() => oauthServerService.getClient({ ctx: deps, clientId })),
      registerClient: (client) =>
        oauthCall(() =>
          oauthServerService.registerClient({ ctx: deps, client: client as OAuthClientInformationFull }),
        ),
    },
    async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response) {
      const req = res.req as Request;
      const base = publicBaseUrl(deps, req);
      // Exactly a registered URI: the handler before this lets a loopback URI change its port.
      if (!client.redirect_uris.includes(params.redirectUri)) {
        sendPage(
          res,
          400,
          page('Sign-in refused', '<h1>Sign-in refused</h1><p>Unregistered redirect_uri.</p>'),
        );
        return;
      }
      const resource = mcpResourceUrl(deps, req);
      if (params.resource && !sameResource(params.resource.href, resource))
        throw new OAUTH_ERRORS.invalid_target!(`This server issues tokens only for ${resource}`);
      const pending: PendingRequest = {
        client_id: client.client_id,
        client_name: client.client_name || client.client_id,
        redirect_uri: params.redirectUri,
        code_challenge: params.codeChallenge,
        state: params.state,
        scopes: params.scopes ?? [],
        resource,
        issuer: base,
        expires_at: Date.now() + CONSENT_TTL_MS,
      };
      sendPage(
        res,
        200,
        consentPage(deps, pending, deps.secrets.encrypt(JSON.stringify(pending)), base),
        pending.redirect_uri,
        deps.config.KAS_OIDC_ISSUER,
      );
    },
    challengeForAuthorizationCode: (client, code) =>
      oauthCall(() => oauthServerService.challengeForCode({ ctx: deps, clientId: client.client_id, code })),
    exchangeAuthorizationCode: (client, code, _verifier, redirectUri, resource) =>
      oauthCall(() =>
        oauthServerService.exchangeCode({
          ctx: deps,
          clientId: client.client_id,
          code,
          redirectUri,
          resource: resource?.href,
        }),
      ),
    exchangeRefreshToken: (client, refreshToken, scopes, resource) =>
      oauthCall(() =>
        oauthServerService.exchangeRefreshToken({
          ctx: deps,
          clientId: client.client_id,
          refreshToken,
          scopes,
          resource: resource?.href,
        }),
      ),
    verifyAccessToken: () => {
      throw new InvalidTokenError('Access tokens are verified by the resource they are for');
    },
    revokeToken: (client, request) =>
      oauthCall(() =>
        oauthServerService.revokeToken({ ctx: deps, clientId: client.client_id, token: request.token }),
      ),
  };
}

/** The authorization request a consent form carries, when it is intact and not expired. */
function openRequest(deps: AppDeps, sealed: unknown): PendingRequest | undefined {
  try {
    const pending = JSON.parse(
      deps.secrets.decrypt(typeof sealed === 'string' ? sealed : ''),
    ) as PendingRequest;
    return pending.expires_at > Date.now() ? pending : undefined;
  } catch {
    return undefined;
  }
}

function expiredRequest(res: Response) {
  sendPage(
    res,
    400,
    page(
      'Sign-in expired',
      '<h1>This sign-in request is invalid or expired</h1><p>Start again from your app.</p>',
    ),
  );
}

/**
 * The person, proven by `credential` through kas's one resolver (failures counted per address as for
 * every credential), approves the client: it gets a code at its redirect URI. A refusal shows the
 * consent page again with the reason.
 */
async function approveAs(
  deps: AppDeps,
  req: Request,
  res: Response,
  pending: PendingRequest,
  sealed: string,
  credential: string,
) {
  try {
    const ctx = createInnerContext(deps, {
      authorization: `Bearer ${credential}`,
      clientAddress: req.ip ?? req.socket.remoteAddress,
    });
    const actor = await authorize(ctx, 'limited');
    const { code } = await oauthServerService.approve({
      ctx: { ...deps, actor },
      request: {
        client_id: pending.client_id,
        redirect_uri: pending.redirect_uri,
        code_challenge: pending.code_challenge,
        scopes: pending.scopes,
        resource: pending.resource,
      },
    });
    redirectWith(res, pending.redirect_uri, { code, state: pending.state, iss: pending.issuer });
  } catch (error) {
    if (error instanceof OAuthProtocolError) {
      redirectWith(res, pending.redirect_uri, {
        error: error.oauth_error,
        error_description: error.detail,
        state: pending.state,
        iss: pending.issuer,
      });
      return;
    }
    const failure = toErrorResponse(error);
    if (failure.status >= 500) {
      sendError(res, error, deps.logger);
      return;
    }
    for (const [name, value] of Object.entries(failure.headers)) res.setHeader(name, value);
    const base = publicBaseUrl(deps, req);
    sendPage(
      res,
      failure.status,
      consentPage(deps, pending, sealed, base, failure.detail),
      pending.redirect_uri,
      deps.config.KAS_OIDC_ISSUER,
    );
  }
}

/** The consent form's answer: denied, or approved with the person's personal access token. */
async function answerConsent(deps: AppDeps, req: Request, res: Response) {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const pending = openRequest(deps, body.request);
  if (!pending) return expiredRequest(res);
  const sealed = body.request as string;
  if (body.decision !== 'approve') {
    redirectWith(res, pending.redirect_uri, {
      error: 'access_denied',
      error_description: 'The person denied access',
      state: pending.state,
      iss: pending.issuer,
    });
    return;
  }
  const token = typeof body.token === 'string' ? body.token.trim() : '';
  if (!token) {
    const base = publicBaseUrl(deps, req);
    sendPage(
      res,
      401,
      consentPage(deps, pending, sealed, base, 'Enter your personal access token.'),
      pending.redirect_uri,
      deps.config.KAS_OIDC_ISSUER,
    );
    return;
  }
  await approveAs(deps, req, res, pending, sealed, token);
}

/** Where the OIDC provider sends the person back to kas (register it at the provider for KAS_OIDC_AUDIENCE). */
const oidcCallbackUrl = (deps: AppDeps, req: Request) =>
  `${publicBaseUrl(deps, req)}/oauth/consent/oidc/callback`;

/**
 * "Sign in with your organisation's account": to the OIDC provider (PKCE S256), carrying the consent
 * request and the verifier encrypted in `state`, so any kas process takes the person back.
 */
async function startOidcSignIn(deps: AppDeps, req: Request, res: Response) {
  const sealed = req.query.request;
  if (!openRequest(deps, sealed)) return expiredRequest(res);
  const verifier = randomBytes(32).toString('base64url');
  const state = deps.secrets.encrypt(
    JSON.stringify({ sealed, verifier, expires_at: Date.now() + CONSENT_TTL_MS }),
  );
  const url = await oidcSignInService.oidcAuthorizationUrl({
    ctx: deps,
    redirectUri: oidcCallbackUrl(deps, req),
    state,
    codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
  });
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(302, url);
}

/** Back from the provider: its ID token proves the person, who then approves as with a personal token. */
async function finishOidcSignIn(deps: AppDeps, req: Request, res: Response) {
  let flow: { sealed: string; verifier: string; expires_at: number };
  try {
    flow = JSON.parse(deps.secrets.decrypt(String(req.query.state ?? ''))) as typeof flow;
    if (flow.expires_at <= Date.now()) throw new Error('expired');
  } catch {
    return expiredRequest(res);
  }
  const pending = openRequest(deps, flow.sealed);
  if (!pending) return expiredRequest(res);
  const base = publicBaseUrl(deps, req);
  if (typeof req.query.code !== 'string') {
    const why = typeof req.query.error === 'string' ? ` (${req.query.error})` : '';
    sendPage(
      res,
      401,
      consentPage(deps, pending, flow.sealed, base, `The sign-in did not complete${why}; try again.`),
      pending.redirect_uri,
      deps.config.KAS_OIDC_ISSUER,
    );
    return;
  }
  let idToken: string;
  try {
    idToken = await oidcSignInService.oidcIdToken({
      ctx: deps,
      code: req.query.code,
      redirectUri: oidcCallbackUrl(deps, req),
      codeVerifier: flow.verifier,
    });
  } catch (error) {
    const failure = toErrorResponse(error);
    sendPage(
      res,
      failure.status,
      consentPage(deps, pending, flow.sealed, base, failure.detail),
      pending.redirect_uri,
      deps.config.KAS_OIDC_ISSUER,
    );
    return;
  }
  await approveAs(deps, req, res, pending, flow.sealed, idToken);
}

/**
 * kas's OAuth 2.1 authorization server for MCP clients (unless KAS_MCP_AUTHORIZATION_SERVER names the
 * OIDC provider): RFC 8414 metadata, dynamic client registration (RFC 7591), the authorization code flow
 * with PKCE S256 only, rotating refresh tokens, the `resource` parameter (RFC 8707) and revocation (RFC
 * 7009), through the MCP SDK's own handlers. Mounted at the root, as the specification places them.
 */
export function createOAuthRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  if (deps.config.KAS_MCP_AUTHORIZATION_SERVER !== 'kas') return router;
  const provider = createProvider(deps);
  // Brute force at the consent form is limited by kas's failed-authentication count; codes and tokens
  // are 256-bit random values. Registration keeps a per-address limit of its own.
  const noLimit = { rateLimit: false as const };
  router.get('/.well-known/oauth-authorization-server', cors(), (req, res) => {
    let metadata: ReturnType<typeof createOAuthMetadata>;
    try {
      metadata = createOAuthMetadata({
        provider,
        issuerUrl: new URL(publicBaseUrl(deps, req)),
        scopesSupported: ['search', 'ask', 'ingest'],
        serviceDocumentationUrl: new URL(`${publicBaseUrl(deps, req)}/api/docs`),
      });
    } catch {
      sendError(
        res,
        new AppError(
          'NOT_FOUND',
          'OAuth sign-in needs an https address: set KAS_PUBLIC_URL to the https URL people reach kas at',
        ),
        deps.logger,
      );
      return;
    }
    // The issuer exactly as the resource metadata names it and as `iss` carries it (RFC 8414 §3.3, RFC
    // 9207): the base URL, without the slash URL serialisation adds.
    res.json({
      ...metadata,
      issuer: publicBaseUrl(deps, req),
      revocation_endpoint_auth_methods_supported: ['client_secret_post', 'none'],
    });
  });
  router.use('/authorize', authorizationHandler({ provider, ...noLimit }));
  router.use('/token', tokenHandler({ provider, ...noLimit }));
  router.use(
    '/register',
    clientRegistrationHandler({
      clientsStore: provider.clientsStore,
      clientSecretExpirySeconds: 0,
      rateLimit: { windowMs: 60 * 60_000, max: 60, validate: false },
    }),
  );
  router.use('/revoke', revocationHandler({ provider, ...noLimit }));
  router.post('/oauth/consent', express.urlencoded({ extended: false, limit: '64kb' }), (req, res) =>
    answerConsent(deps, req, res),
  );
  if (deps.config.KAS_OIDC_ISSUER) {
    router.get('/oauth/consent/oidc', (req, res, next) => startOidcSignIn(deps, req, res).catch(next));
    router.get('/oauth/consent/oidc/callback', (req, res, next) =>
      finishOidcSignIn(deps, req, res).catch(next),
    );
  }
  router.use(
    '/oauth/consent',
    (error: unknown, _req: Request, res: Response, _next: express.NextFunction) => {
      sendError(res, error, deps.logger);
    },
  );
  return router;
}
