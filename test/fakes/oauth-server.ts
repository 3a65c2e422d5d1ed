import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeOAuthServer {
  url: string;
  authorizationUrl: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** Seconds until issued access tokens expire. */
  expiresIn: number;
  /** Every token request's form, in order. */
  tokenRequests: Array<Record<string, string>>;
  /** Access tokens issued, newest last, with the user they were issued to. */
  issued: Array<{ access_token: string; user: string }>;
  /**
   * What the user's browser does: opens the authorization URL as `user` (auto-approved) and returns
   * the `code` and `state` from the redirect.
   */
  authorize(
    authorizationUrl: string,
    user: string,
  ): Promise<{ code: string; state: string; redirect: string }>;
  close(): Promise<void>;
}

/**
 * An OAuth 2.1 authorization server for the authorization code grant with PKCE (S256 only) and
 * refresh tokens (RFC 6749, RFC 7636): confidential client, client_secret_post.
 */
export async function startFakeOAuthServer(): Promise<FakeOAuthServer> {
  const codes = new Map<string, { challenge: string; redirect: string; user: string }>();
  const refresh = new Map<string, string>();
  let n = 0;
  const fake = {
    clientId: 'kas-client',
    clientSecret: 'kas-secret',
    expiresIn: 3600,
    tokenRequests: [],
    issued: [],
  } as unknown as FakeOAuthServer;
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, v: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const p = url.searchParams;
      if (
        p.get('client_id') !== fake.clientId ||
        p.get('code_challenge_method') !== 'S256' ||
        !p.get('code_challenge')
      )
        return json(400, { error: 'invalid_request' });
      const code = `code-${++n}`;
      codes.set(code, {
        challenge: p.get('code_challenge') as string,
        redirect: p.get('redirect_uri') as string,
        user: req.headers['x-user'] as string,
      });
      const to = new URL(p.get('redirect_uri') as string);
      to.searchParams.set('code', code);
      to.searchParams.set('state', p.get('state') as string);
      res.writeHead(302, { location: to.toString() }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      fake.tokenRequests.push(form);
      if (form.client_id !== fake.clientId || form.client_secret !== fake.clientSecret)
        return json(401, { error: 'invalid_client' });
      let user: string | undefined;
      if (form.grant_type === 'authorization_code') {
        const entry = codes.get(form.code ?? '');
        codes.delete(form.code ?? '');
        const challenge = createHash('sha256')
          .update(form.code_verifier ?? '')
          .digest('base64url');
        if (!entry || entry.challenge !== challenge || entry.redirect !== form.redirect_uri)
          return json(400, { error: 'invalid_grant' });
        user = entry.user;
      } else if (form.grant_type === 'refresh_token') {
        user = refresh.get(form.refresh_token ?? '');
        if (!user) return json(400, { error: 'invalid_grant' });
      } else return json(400, { error: 'unsupported_grant_type' });
      const access_token = `at-${user}-${++n}`;
      const refresh_token = `rt-${user}-${n}`;
      refresh.set(refresh_token, user);
      fake.issued.push({ access_token, user });
      return json(200, { access_token, token_type: 'Bearer', expires_in: fake.expiresIn, refresh_token });
    }
    json(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  Object.assign(fake, {
    url: base,
    authorizationUrl: `${base}/authorize`,
    tokenUrl: `${base}/token`,
    authorize: async (authorizationUrl: string, user: string) => {
      const r = await fetch(authorizationUrl, { redirect: 'manual', headers: { 'x-user': user } });
      const location = new URL(r.headers.get('location') ?? '');
      return {
        code: location.searchParams.get('code') ?? '',
        state: location.searchParams.get('state') ?? '',
        redirect: `${location.origin}${location.pathname}`,
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return fake;
}
