import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type Configuration, errors } from 'oidc-provider';

export interface OidcAccount {
  email: string;
  /** Defaults to `true`; an explicit `undefined` leaves the claim out, a string is sent as a string. */
  email_verified?: boolean | string | undefined;
  groups?: string[];
}

/** The provider also acting as an OAuth 2.1 authorization server for one protected resource (an MCP server). */
export interface FakeOidcProviderOptions {
  /** Open dynamic client registration (RFC 7591) at `/reg`. */
  registration?: boolean;
  /** More redirect URIs registered for the `kas` client (kas's own sign-in callback). */
  redirectUris?: string[];
  /**
   * A resource server (RFC 8707 resource indicator): access tokens for it are JWTs (RS256, from the
   * provider's JWKS) with `aud` = the indicator, lasting `accessTokenTtl()` seconds (read at issue).
   */
  resource?: {
    indicators: string[];
    scope: string;
    accessTokenTtl: () => number;
    /** The resource a request that names none gets (clients that do not send RFC 8707 `resource`). */
    defaultIndicator?: string;
  };
}

export interface FakeOidcProvider {
  /** The issuer URL (also the discovery base). */
  issuer: string;
  clientId: string;
  /** The `kas` client's secret (`client_secret_post`). */
  clientSecret: string;
  /** Signs in `login` through the authorization code flow (PKCE, scripted login and consent); returns the ID token. */
  signIn(login: string): Promise<string>;
  /**
   * Plays the browser on an authorization URL made by someone else: signs in `login`, consents to
   * what is asked, and returns the URL the provider finally redirects to (with `code` and `state`).
   */
  authorize(authorizationUrl: string, login: string): Promise<string>;
  /** How many tokens the token endpoint issued, by grant type. */
  grants: Record<string, number>;
  /** A new signing key becomes current; the old one stays published. */
  rotateKeys(): Promise<void>;
  close(): Promise<void>;
}

const REDIRECT_URI = 'http://127.0.0.1/callback';

async function signingKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: `k${Date.now()}${Math.random().toString(36).slice(2, 6)}`, alg: 'RS256', use: 'sig' };
}

/**
 * A real OpenID provider (`oidc-provider`) on a random port: discovery, JWKS, authorization code flow
 * with PKCE and a token endpoint. The login and consent screens are replaced by handlers that sign in
 * the account named by `login_hint` and grant what is asked, so tests script the browser's part.
 */
export async function startFakeOidcProvider(
  accounts: Record<string, OidcAccount>,
  options: FakeOidcProviderOptions = {},
): Promise<FakeOidcProvider> {
  const grants: Record<string, number> = {};
  const clientId = 'kas';
  const clientSecret = 'kas-client-secret-kas-client-secret';
  let keys = [await signingKey()];
  let provider: Provider;
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      interact(req, res).catch((error) => {
        res.statusCode = 500;
        res.end(String(error));
      });
      return;
    }
    provider.callback()(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const build = () =>
    new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: [REDIRECT_URI, ...(options.redirectUris ?? [])],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
        },
      ],
      jwks: { keys },
      // Put the email and groups claims in the ID token itself (not only in userinfo).
      conformIdTokenClaims: false,
      cookies: { keys: ['fake-oidc-cookie-key'] },
      claims: { email: ['email', 'email_verified'], groups: ['groups'] },
      scopes: ['openid', 'email', 'groups', ...(options.resource ? [options.resource.scope] : [])],
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: options.registration === true },
        ...(options.resource ? { resourceIndicators: resourceIndicators(options.resource) } : {}),
      },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      pkce: { required: () => true },
      ...(options.resource
        ? {
            // Refresh tokens for every client allowed the grant (no offline_access ceremony).
            issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
          }
        : {}),
      findAccount: (_ctx, id) => {
        const account = accounts[id];
        if (!account) return undefined;
        return {
          accountId: id,
          claims: () => ({ sub: id, email_verified: true, ...account }),
        };
      },
    });
  provider = build();
  const listen = (p: Provider) =>
    p.on('grant.success', (ctx) => {
      const type = String((ctx as { oidc?: { params?: { grant_type?: unknown } } }).oidc?.params?.grant_type);
      grants[type] = (grants[type] ?? 0) + 1;
    });
  listen(provider);

  async function interact(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      const accountId = String(details.params.login_hint);
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const grant = new provider.Grant({
      accountId: details.session!.accountId,
      clientId: String(details.params.client_id),
    });
    const missingScope = details.prompt.details.missingOIDCScope as string[] | undefined;
    if (missingScope) grant.addOIDCScope(missingScope.join(' '));
    const missingClaims = details.prompt.details.missingOIDCClaims as string[] | undefined;
    if (missingClaims) grant.addOIDCClaims(missingClaims);
    const missingResource = details.prompt.details.missingResourceScopes as
      | Record<string, string[]>
      | undefined;
    for (const [indicator, scopes] of Object.entries(missingResource ?? {}))
      grant.addResourceScope(indicator, scopes.join(' '));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  async function authorize(authorizationUrl: string, login: string): Promise<string> {
    const cookies = new Map<string, string>();
    const start = new URL(authorizationUrl);
    start.searchParams.set('login_hint', login);
    let url = start.toString();
    for (let hop = 0; hop < 10; hop++) {
      const res = await fetch(url, {
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`authorization stopped at ${url}: ${res.status} ${await res.text()}`);
      url = new URL(location, issuer).toString();
      if (!url.startsWith(issuer)) return url;
    }
    throw new Error(`too many redirects from ${authorizationUrl}`);
  }

  async function signIn(login: string): Promise<string> {
    const verifier = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
    const challenge = Buffer.from(
      await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)),
    ).toString('base64url');
    const cookies = new Map<string, string>();
    let url = `${issuer}/auth?${new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      scope: 'openid email groups',
      redirect_uri: REDIRECT_URI,
      login_hint: login,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'state',
      nonce: 'nonce',
    })}`;
    for (let hop = 0; hop < 10; hop++) {
      const res = await fetch(url, {
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`sign-in stopped at ${url}: ${res.status} ${await res.text()}`);
      url = new URL(location, issuer).toString();
      if (url.startsWith(REDIRECT_URI)) break;
    }
    const code = new URL(url).searchParams.get('code');
    if (!code) throw new Error(`no code in ${url}`);
    const token = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: clientId,
        client_secret: clientSecret,
      }),
    });
    const body = (await token.json()) as { id_token?: string };
    if (!body.id_token) throw new Error(`token endpoint answered ${JSON.stringify(body)}`);
    return body.id_token;
  }

  return {
    issuer,
    clientId,
    clientSecret,
    signIn,
    authorize,
    grants,
    async rotateKeys() {
      keys = [await signingKey(), ...keys];
      provider = build();
      listen(provider);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type ResourceIndicators = NonNullable<NonNullable<Configuration['features']>['resourceIndicators']>;

function resourceIndicators(resource: NonNullable<FakeOidcProviderOptions['resource']>): ResourceIndicators {
  return {
    enabled: true,
    defaultResource: async (_ctx, _client, oneOf) => oneOf ?? resource.defaultIndicator,
    useGrantedResource: async () => true,
    getResourceServerInfo: async (_ctx, indicator) => {
      if (!resource.indicators.includes(indicator)) throw new errors.InvalidTarget();
      return {
        scope: resource.scope,
        audience: indicator,
        accessTokenTTL: resource.accessTokenTtl(),
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      };
    },
  };
}
