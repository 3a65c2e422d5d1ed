import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOAuthServer, startFakeOAuthServer } from '../../../../test/fakes/oauth-server.ts';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { type FakeOpenApiService, startFakeOpenApiService } from '../../../../test/fakes/openapi-service.ts';
import { objs, streamAll } from '../chat/chat.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

let llm: FakeLlmServer;
let api: FakeOpenApiService;
let idp: FakeOAuthServer;
let alice: { key: string; user_id: string };
let bob: { key: string; user_id: string };
let configId: number;
let agentId: number;

beforeAll(async () => {
  [llm, api, idp] = await Promise.all([startFakeOpenAi(), startFakeOpenApiService(), startFakeOAuthServer()]);
});
afterAll(async () => {
  await Promise.all([llm?.close(), api?.close(), idp?.close()]);
});
const t = useTestRuntime(() =>
  actionsEnv(llm.baseURL, {
    KAS_PUBLIC_URL: 'https://kas.example.org',
  }),
);
beforeAll(async () => {
  alice = await t.createKey('basic', 'alice');
  bob = await t.createKey('basic', 'bob');
  const admin = t.caller(t.adminKey);
  const config = await admin.oauthConfigs.create({
    name: 'Weather SSO',
    authorization_url: idp.authorizationUrl,
    token_url: idp.tokenUrl,
    client_id: idp.clientId,
    client_secret: idp.clientSecret,
    scopes: 'read, write',
  });
  configId = config.id;
  const action = await admin.actions.createCustomTool({ definition: api.spec(), oauth_config_id: configId });
  agentId = (await admin.personas.create(agentInput('oauth weather', [action.id]))).id;
});

describe('OAuth for OpenAPI actions', () => {
  it('shows the redirect URI and never the client credentials', async () => {
    const snapshot = await t.caller(t.adminKey).oauthConfigs.get({ oauth_config_id: configId });
    expect(snapshot).toMatchObject({
      scopes: ['read', 'write'],
      has_client_credentials: true,
      tool_count: 1,
      redirect_uri: 'https://kas.example.org/oauth-config/callback',
    });
    expect(JSON.stringify(snapshot)).not.toContain(idp.clientSecret);
    expect(
      (await errorOf(t.caller(t.adminKey).oauthConfigs.delete({ oauth_config_id: configId }))).status,
    ).toBe(400);
    expect((await errorOf(t.caller(alice.key).oauthConfigs.list({}))).status).toBe(403);
  });

  it('connects each user with PKCE, uses only their own token, refreshes before expiry', async () => {
    const aliceCaller = t.caller(alice.key);
    const start = await aliceCaller.oauthConfigs.initiate({ oauth_config_id: configId });
    const url = new URL(start.authorization_url);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('scope')).toBe('read write');
    const { code, state, redirect } = await idp.authorize(start.authorization_url, 'alice');
    expect(redirect).toBe('https://kas.example.org/oauth-config/callback');
    // Bob cannot finish Alice's flow.
    expect((await errorOf(t.caller(bob.key).oauthConfigs.callback({ code, state }))).detail).toBe(
      'This OAuth state was issued to another user',
    );
    const again = await aliceCaller.oauthConfigs.initiate({ oauth_config_id: configId });
    const second = await idp.authorize(again.authorization_url, 'alice');
    expect(await aliceCaller.oauthConfigs.callback(second)).toMatchObject({ success: true });
    expect((await errorOf(aliceCaller.oauthConfigs.callback(second))).detail).toMatch(
      /Unknown or expired OAuth state/,
    );
    const aliceToken = idp.issued.at(-1)!.access_token;
    const raw = await t.deps.db.selectFrom('oauth_user_tokens').select('token_enc').executeTakeFirstOrThrow();
    expect(raw.token_enc).not.toContain(aliceToken);

    llm.enqueue(
      { toolCalls: [{ id: 'f', name: 'getForecast', arguments: '{"city":"Lyon"}' }] },
      { tokens: ['ok'] },
    );
    await streamAll(aliceCaller, { message: 'forecast Lyon', chat_session_info: { persona_id: agentId } });
    expect(api.requests.at(-1)!.headers.authorization).toBe(`Bearer ${aliceToken}`);

    // Bob has not connected: the action is left out with a note, Alice's token is not used.
    const before = llm.requests.length;
    const seen = api.requests.length;
    const bobLines = await streamAll(t.caller(bob.key), {
      message: 'forecast Lyon',
      chat_session_info: { persona_id: agentId },
    });
    expect(llm.requests[before]!.tools).toBeUndefined();
    expect(llm.requests[before]!.messages[0].content).toContain(
      'the user has not connected their account yet',
    );
    expect(objs(bobLines).some((o) => o.type === 'custom_tool_start')).toBe(false);
    expect(api.requests.length).toBe(seen);

    // A token about to expire is refreshed before the call.
    await t.deps.db
      .updateTable('oauth_user_tokens')
      .set({ expires_at: new Date(Date.now() + 1000) })
      .where('user_id', '=', alice.user_id)
      .execute();
    llm.enqueue(
      { toolCalls: [{ id: 'g', name: 'getForecast', arguments: '{"city":"Nantes"}' }] },
      { tokens: ['ok'] },
    );
    await streamAll(aliceCaller, { message: 'forecast Nantes', chat_session_info: { persona_id: agentId } });
    expect(idp.tokenRequests.at(-1)).toMatchObject({ grant_type: 'refresh_token' });
    const refreshed = idp.issued.at(-1)!;
    expect(refreshed.user).toBe('alice');
    expect(api.requests.at(-1)!.headers.authorization).toBe(`Bearer ${refreshed.access_token}`);

    await aliceCaller.oauthConfigs.disconnect({ oauth_config_id: configId });
    expect((await errorOf(aliceCaller.oauthConfigs.disconnect({ oauth_config_id: configId }))).status).toBe(
      404,
    );
  });
});
