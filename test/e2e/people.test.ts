import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeOidcProvider, type OidcAccount, startFakeOidcProvider } from '../fakes/oidc-provider.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

/** The issue's "done when", over HTTP as a new user would try it, on both databases. */
describe.each(['pglite', 'postgres'] as const)('REST: people on %s', (db) => {
  let s: TestServer;
  let idp: FakeOidcProvider;
  const accounts: Record<string, OidcAccount> = {
    ann: { email: 'ann@corp.example' },
    cy: { email: 'cy@corp.example' },
    stringy: { email: 'stringy@corp.example', email_verified: 'false' },
    keyholder: { email: 'keyholder@corp.example' },
  };
  beforeAll(async () => {
    idp = await startFakeOidcProvider(accounts);
    s = await startTestServer({
      db,
      env: {
        KAS_OIDC_ISSUER: idp.issuer,
        KAS_OIDC_AUDIENCE: idp.clientId,
        KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
      },
    });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await s?.close();
    await idp?.close();
  });

  it('OIDC sign-in provisions by email, a personal token works, deactivation refuses the next request', async () => {
    const idToken = await idp.signIn('ann');
    const me = await s.request('GET', '/api/me', { key: idToken });
    expect(me.status).toBe(200);
    const ann = await me.json();
    expect(ann).toMatchObject({
      email: 'ann@corp.example',
      role: 'basic',
      credential: 'oidc',
      api_key_id: null,
    });

    const created = await s.request('POST', '/api/user/pats', { key: idToken, body: { name: 'laptop' } });
    expect(created.status).toBe(200);
    const { token, id } = await created.json();
    expect(token).toMatch(/^kpat-/);
    const viaToken = await s.request('GET', '/api/me', { key: token });
    expect(await viaToken.json()).toMatchObject({ user_id: ann.user_id, credential: 'personal_token' });
    const listed = await (await s.request('GET', '/api/user/pats', { key: token })).json();
    expect(listed).toEqual([expect.objectContaining({ id, name: 'laptop', expires_at: null })]);
    expect(listed[0]).not.toHaveProperty('token');

    const users = await (
      await s.request('GET', '/api/manage/users/accepted?q=ann%40&page_num=0&page_size=5', {
        key: s.adminKey,
      })
    ).json();
    expect(users).toEqual({
      items: [
        {
          id: ann.user_id,
          email: 'ann@corp.example',
          role: 'basic',
          account_type: 'person',
          is_active: true,
        },
      ],
      total_items: 1,
    });

    const deactivated = await s.request('PATCH', '/api/manage/admin/deactivate-user', {
      key: s.adminKey,
      body: { user_email: 'ann@corp.example' },
    });
    expect(deactivated.status).toBe(200);
    for (const credential of [token, idToken]) {
      const refused = await s.request('GET', '/api/me', { key: credential });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({
        error_code: 'UNAUTHENTICATED',
        detail: expect.stringContaining('deactivated'),
      });
    }
    await s.request('PATCH', '/api/manage/admin/activate-user', {
      key: s.adminKey,
      body: { user_email: 'ann@corp.example' },
    });
    expect((await s.request('GET', '/api/me', { key: token })).status).toBe(200);

    const deleted = await s.request('DELETE', '/api/manage/admin/delete-user?user_email=ann%40corp.example', {
      key: s.adminKey,
    });
    expect(deleted.status).toBe(204);
    expect((await s.request('GET', '/api/me', { key: token })).status).toBe(401);
  });

  it('a credential never mints a personal token that outlives or outranks it', async () => {
    const key = await s.createKey('admin');
    const byKey = await s.request('POST', '/api/user/pats', { key: key.key, body: { name: 'escape' } });
    expect(byKey.status).toBe(403);
    expect(await byKey.json()).toEqual({
      error_code: 'INSUFFICIENT_PERMISSIONS',
      detail: expect.stringContaining('API key'),
    });

    const idToken = await idp.signIn('cy');
    const day = await (
      await s.request('POST', '/api/user/pats', { key: idToken, body: { name: 'day', expiration_days: 1 } })
    ).json();
    const forever = await s.request('POST', '/api/user/pats', { key: day.token, body: { name: 'forever' } });
    expect(forever.status).toBe(200);
    const child = await forever.json();
    expect(child.expires_at).toBe(day.expires_at);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    try {
      const expired = await s.request('GET', '/api/me', { key: child.token });
      expect(expired.status).toBe(401);
      expect(await expired.json()).toMatchObject({ error_code: 'UNAUTHENTICATED' });
    } finally {
      vi.useRealTimers();
    }
  });

  it("OIDC never signs in as a key's service account nor takes a string as a verified email", async () => {
    const admin = await (await s.request('GET', '/api/me', { key: s.adminKey })).json();
    accounts.keyholder = { email: admin.email };
    for (const login of ['keyholder', 'stringy']) {
      const refused = await s.request('GET', '/api/me', { key: await idp.signIn(login) });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({ error_code: 'UNAUTHENTICATED', detail: expect.any(String) });
    }
  });

  it('an expired key is 401 saying it expired', async () => {
    const res = await s.request('POST', '/api/admin/api-key', {
      key: s.adminKey,
      body: { name: 'temp', role: 'basic', expires_in_days: 1 },
    });
    const key = await res.json();
    expect(key.expires_at).toEqual(expect.any(String));
    expect((await s.request('GET', '/api/me', { key: key.api_key })).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    try {
      const expired = await s.request('GET', '/api/me', { key: key.api_key });
      expect(expired.status).toBe(401);
      expect(await expired.json()).toEqual({
        error_code: 'UNAUTHENTICATED',
        detail: expect.stringMatching(/expired/),
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it('admin user endpoints need an admin and answer errors in the one shape', async () => {
    const basic = await s.createKey('basic');
    const forbidden = await s.request('PUT', '/api/manage/admin/users', {
      key: basic.key,
      body: { emails: ['x@corp.example'] },
    });
    expect(forbidden.status).toBe(403);
    const missing = await s.request('PATCH', '/api/manage/set-user-role', {
      key: s.adminKey,
      body: { user_email: 'nobody@corp.example', new_role: 'admin' },
    });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error_code: 'USER_NOT_FOUND' });
    const invalid = await s.request('PUT', '/api/manage/admin/users', {
      key: s.adminKey,
      body: { emails: ['nope'] },
    });
    expect(invalid.status).toBe(422);
    const invited = await s.request('PUT', '/api/manage/admin/users', {
      key: s.adminKey,
      body: { emails: ['Bo@Corp.example'], role: 'curator' },
    });
    expect(await invited.json()).toEqual([
      expect.objectContaining({ email: 'bo@corp.example', role: 'curator' }),
    ]);
  });
});
