import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface OidcAccount {
  email: string;
  email_verified?: boolean;
  groups?: string[];
}

export interface FakeOidcProvider {
  /** The issuer URL (also the discovery base). */
  issuer: string;
  clientId: string;
  /** Signs in `login` through the authorization code flow (PKCE, scripted login and consent); returns the ID token. */
  signIn(login: string): Promise<string>;
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
): Promise<FakeOidcProvider> {
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
          redirect_uris: [REDIRECT_URI],
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
      scopes: ['openid', 'email', 'groups'],
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      pkce: { required: () => true },
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
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
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
    signIn,
    async rotateKeys() {
      keys = [await signingKey(), ...keys];
      provider = build();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
