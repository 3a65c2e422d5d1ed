import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOidcProvider, startFakeOidcProvider } from '../../../../test/fakes/oidc-provider.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { type FakeOpenApiService, startFakeOpenApiService } from '../../../../test/fakes/openapi-service.ts';
import { objs, streamAll } from '../chat/chat.test-helpers.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

/**
 * OpenAPI actions with per-user OAuth against a real authorization server (`oidc-provider`): the
 * API checks each bearer token as a resource server does (a JWT from the provider's keys, for its
 * own audience), so only a token the provider really issued to that user gets through.
 */
let llm: FakeLlmServer;
let api: FakeOpenApiService;
let provider: FakeOidcProvider;
let ttl = 3600;
const revoked = new Set<string>();
const indicators: string[] = [];
const REDIRECT = 'https://kas.example.org/oauth-config/callback';

beforeAll(async () => {
  [llm, api] = await Promise.all([startFakeOpenAi(), startFakeOpenApiService()]);
  indicators.push(api.url);
  provider = await startFakeOidcProvider(
    { alice: { email: 'alice@example.com' }, bob: { email: 'bob@example.com' } },
    {
      registration: true,
      resource: { indicators, scope: 'weather:read', accessTokenTtl: () => ttl, defaultIndicator: api.url },
    },
  );
  const jwks = createRemoteJWKSet(new URL(`${provider.issuer}/jwks`));
  api.authorize = async (headers) => {
    const token = /^Bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
    if (!token || revoked.has(token)) return false;
    return jwtVerify(token, jwks, { issuer: provider.issuer, audience: api.url }).then(
      () => true,
      () => false,
    );
  };
});
afterAll(async () => {
  await Promise.all([llm?.close(), api?.close(), provider?.close()]);
});
const t = useTestRuntime(() =>
  actionsEnv(llm.baseURL, {
    KAS_PUBLIC_URL: 'https://kas.example.org',
  }),
);

describe('OAuth for OpenAPI actions with oidc-provider', () => {
  it('connects each user, sends only their token, refreshes before expiry and after a 401', async () => {
    // The admin registers kas with the provider (here through its RFC 7591 endpoint) and enters the client.
    const client = (await (
      await fetch(`${provider.issuer}/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          redirect_uris: [REDIRECT],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
        }),
      })
    ).json()) as { client_id: string; client_secret: string };
    const admin = t.caller(t.adminKey);
    const config = await admin.oauthConfigs.create({
      name: 'Weather SSO',
      authorization_url: `${provider.issuer}/auth`,
      token_url: `${provider.issuer}/token`,
      client_id: client.client_id,
      client_secret: client.client_secret,
      scopes: 'weather:read',
    });
    expect(config.redirect_uri).toBe(REDIRECT);
    const action = await admin.actions.createCustomTool({
      definition: api.spec(),
      oauth_config_id: config.id,
    });
    const agent = await admin.personas.create(agentInput('weather', [action.id]));

    const connect = async (key: string, login: string) => {
      const start = await t.caller(key).oauthConfigs.initiate({ oauth_config_id: config.id });
      const landed = new URL(await provider.authorize(start.authorization_url, login));
      expect(`${landed.origin}${landed.pathname}`).toBe(REDIRECT);
      await t.caller(key).oauthConfigs.callback({
        code: landed.searchParams.get('code')!,
        state: landed.searchParams.get('state')!,
      });
    };
    const forecast = async (key: string) => {
      llm.enqueue(
        { toolCalls: [{ id: 'f', name: 'getForecast', arguments: '{"city":"Lyon"}' }] },
        { tokens: ['ok'] },
      );
      const lines = await streamAll(t.caller(key), {
        message: 'forecast Lyon',
        chat_session_info: { persona_id: agent.id },
      });
      return objs(lines).find((o) => o.type === 'custom_tool_delta');
    };
    const lastToken = () => String(api.requests.at(-1)!.headers.authorization).replace(/^Bearer /, '');
    const subjectOf = async (token: string) =>
      (await jwtVerify(token, createRemoteJWKSet(new URL(`${provider.issuer}/jwks`)))).payload.sub;

    const alice = await t.createKey('basic', 'alice');
    const bob = await t.createKey('basic', 'bob');
    ttl = 64; // inside kas's one-minute refresh margin 4 s after issue
    await connect(alice.key, 'alice');
    const connectedAt = Date.now();
    expect(await forecast(alice.key)).toMatchObject({ error: null, data: { city: 'Lyon' } });
    const first = lastToken();
    expect(await subjectOf(first)).toBe('alice');
    expect(provider.grants.refresh_token ?? 0).toBe(0);

    await connect(bob.key, 'bob');
    expect(await forecast(bob.key)).toMatchObject({ error: null });
    expect(await subjectOf(lastToken())).toBe('bob');

    // Expiry: refreshed before the call.
    ttl = 3600;
    await new Promise((r) => setTimeout(r, Math.max(0, connectedAt + 4500 - Date.now())));
    expect(await forecast(alice.key)).toMatchObject({ error: null });
    const second = lastToken();
    expect(second).not.toBe(first);
    expect(await subjectOf(second)).toBe('alice');
    const afterExpiry = provider.grants.refresh_token ?? 0;
    expect(afterExpiry).toBeGreaterThanOrEqual(1);

    // The API refuses the token (revoked): refreshed once, and the call goes through.
    revoked.add(second);
    expect(await forecast(alice.key)).toMatchObject({ error: null, data: { city: 'Lyon' } });
    expect(provider.grants.refresh_token).toBe(afterExpiry + 1);
    expect(await subjectOf(lastToken())).toBe('alice');
  }, 60_000);
});
