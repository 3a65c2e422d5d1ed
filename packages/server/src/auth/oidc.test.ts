import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type FakeOidcProvider,
  type OidcAccount,
  startFakeOidcProvider,
} from '../../../../test/fakes/oidc-provider.ts';
import { configFrom } from '../config.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { authenticate, authenticateOidc } from './authenticate.ts';
import { createOidcVerifier } from './oidc.ts';

let idp: FakeOidcProvider;
// Mutable: a test changes what the provider says about an account between sign-ins.
const accounts: Record<string, OidcAccount> = {
  alice: { email: 'Alice@Corp.example' },
  root: { email: 'root@corp.example' },
  cora: { email: 'cora@corp.example', groups: ['kas-curators'] },
  eve: { email: 'eve@corp.example', email_verified: false },
  dana: { email: 'dana@corp.example' },
  quoted_false: { email: 'quoted-false@corp.example', email_verified: 'false' },
  quoted_true: { email: 'quoted-true@corp.example', email_verified: 'true' },
  silent: { email: 'silent@corp.example', email_verified: undefined },
  mallory: { email: 'mallory@corp.example' },
  impostor: { email: 'impostor@corp.example' },
  keyholder: { email: 'keyholder@corp.example' },
};
beforeAll(async () => {
  idp = await startFakeOidcProvider(accounts);
});
afterAll(async () => {
  await idp?.close();
});
const t = useTestRuntime(() => ({
  KAS_OIDC_ISSUER: idp.issuer,
  KAS_OIDC_AUDIENCE: idp.clientId,
  KAS_OIDC_ADMIN_EMAILS: 'ROOT@corp.example',
  KAS_OIDC_CURATOR_GROUPS: 'kas-curators',
  KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
  KAS_OIDC_JWKS_COOLDOWN_MS: '0',
}));
afterAll(() => {
  vi.useRealTimers();
});

describe('OIDC sign-in', () => {
  it('provisions a basic user by email on the first request and keeps the verified token on the actor', async () => {
    const token = await idp.signIn('alice');
    expect(token.split('.')).toHaveLength(3);
    const me = await t.caller(token).apiKeys.me({});
    expect(me).toMatchObject({
      role: 'basic',
      email: 'alice@corp.example',
      credential: 'oidc',
      api_key_id: null,
    });
    const users = await t.caller(t.adminKey).users.page({ q: 'alice@', page_num: 0, page_size: 10 });
    expect(users.items).toEqual([
      { id: me.user_id, email: 'alice@corp.example', role: 'basic', account_type: 'person', is_active: true },
    ]);
    const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
    expect(actor.oidc_token).toBe(token);
    // The same person again: found, not provisioned twice.
    expect((await t.caller(await idp.signIn('alice')).apiKeys.me({})).user_id).toBe(me.user_id);
  });

  it('creates a personal token that acts as the same person', async () => {
    const token = await idp.signIn('alice');
    const asAlice = t.caller(token);
    const me = await asAlice.apiKeys.me({});
    const pat = await asAlice.personalTokens.create({ name: 'cli' });
    expect(await t.caller(pat.token).apiKeys.me({})).toMatchObject({
      user_id: me.user_id,
      credential: 'personal_token',
    });
  });

  it('grants admin by email and curator by group claim', async () => {
    expect(await t.caller(await idp.signIn('root')).apiKeys.me({})).toMatchObject({ role: 'admin' });
    expect(await t.caller(await idp.signIn('cora')).apiKeys.me({})).toMatchObject({ role: 'curator' });
  });

  it('refuses a deactivated person on the next request', async () => {
    const token = await idp.signIn('dana');
    expect(await t.caller(token).apiKeys.me({})).toMatchObject({ email: 'dana@corp.example' });
    await t.caller(t.adminKey).users.deactivate({ user_email: 'dana@corp.example' });
    const error = await errorOf(t.caller(token).apiKeys.me({}));
    expect(error).toMatchObject({ status: 401, error_code: 'UNAUTHENTICATED' });
    expect(error.detail).toContain('deactivated');
  });

  it('follows a key rotation at the provider', async () => {
    await t.caller(await idp.signIn('alice')).apiKeys.me({});
    await idp.rotateKeys();
    const token = await idp.signIn('alice');
    expect(await t.caller(token).apiKeys.me({})).toMatchObject({ email: 'alice@corp.example' });
  });

  it('says so when OIDC is not configured', async () => {
    const token = await idp.signIn('alice');
    const error = await errorOf(authenticateOidc({ ctx: { db: t.deps.db, oidc: null }, token }));
    expect(error).toMatchObject({ status: 401 });
    expect(error.detail).toContain('KAS_OIDC_ISSUER');
  });
  it("never signs in as an API key's service account, whatever the email claim says", async () => {
    const adminKey = await t.caller(t.adminKey).apiKeys.me({});
    expect(adminKey.email).toMatch(/@service-account\.kas$/);
    accounts.keyholder = { email: adminKey.email };
    const error = await errorOf(t.caller(await idp.signIn('keyholder')).apiKeys.me({}));
    expect(error).toMatchObject({ status: 401, error_code: 'UNAUTHENTICATED' });
    // Nor is a person provisioned at a service-account address.
    accounts.keyholder = { email: 'api-key-forged@service-account.kas' };
    expect(await errorOf(t.caller(await idp.signIn('keyholder')).apiKeys.me({}))).toMatchObject({
      status: 401,
    });
    const page = await t.caller(t.adminKey).users.page({ q: 'forged', page_num: 0, page_size: 5 });
    expect(page.total_items).toBe(0);
  });

  it('takes only boolean true as a verified email; no claim only when the provider is trusted to vouch', async () => {
    for (const login of ['quoted_false', 'quoted_true', 'silent']) {
      const error = await errorOf(t.caller(await idp.signIn(login)).apiKeys.me({}));
      expect(error).toMatchObject({ status: 401, error_code: 'UNAUTHENTICATED' });
    }
    const trusting = createOidcVerifier(
      configFrom({
        KAS_OIDC_ISSUER: idp.issuer,
        KAS_OIDC_AUDIENCE: idp.clientId,
        KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
        KAS_OIDC_TRUST_UNVERIFIED_EMAIL: 'true',
      }),
      t.deps.outbound.fetch,
    )!;
    expect(await trusting.verify(await idp.signIn('silent'))).toMatchObject({ email: 'silent@corp.example' });
    expect((await errorOf(trusting.verify(await idp.signIn('quoted_true')))).detail).toContain('unverified');
  });

  it('keeps a person on the account their (iss, sub) is linked to when emails change at the provider', async () => {
    const alice = await t.caller(await idp.signIn('alice')).apiKeys.me({});
    const mallory = await t.caller(await idp.signIn('mallory')).apiKeys.me({});
    expect(mallory.user_id).not.toBe(alice.user_id);

    // Mallory renames herself to Alice's address: she is still Mallory.
    accounts.mallory = { email: 'alice@corp.example' };
    expect(await t.caller(await idp.signIn('mallory')).apiKeys.me({})).toMatchObject({
      user_id: mallory.user_id,
      email: 'mallory@corp.example',
    });
    // A subject never seen before with Alice's address is not Alice either.
    accounts.impostor = { email: 'alice@corp.example' };
    expect(await errorOf(t.caller(await idp.signIn('impostor')).apiKeys.me({}))).toMatchObject({
      status: 401,
      error_code: 'UNAUTHENTICATED',
    });
    // Alice changing her address stays Alice.
    accounts.alice = { email: 'alice.new@corp.example' };
    expect((await t.caller(await idp.signIn('alice')).apiKeys.me({})).user_id).toBe(alice.user_id);
    accounts.alice = { email: 'Alice@Corp.example' };
  });

  // Last: fake time moves the verifier's key-set timestamp into the future.
  it('refuses unverified emails, tampered signatures, other audiences and expired tokens', async () => {
    expect((await errorOf(t.caller(await idp.signIn('eve')).apiKeys.me({}))).detail).toContain('unverified');

    const token = await idp.signIn('alice');
    const [h, p, s] = token.split('.');
    const tampered = `${h}.${p}.${s!.startsWith('A') ? 'B' : 'A'}${s!.slice(1)}`;
    const bad = await errorOf(t.caller(tampered).apiKeys.me({}));
    expect(bad).toMatchObject({ status: 401 });

    const other = createOidcVerifier(
      configFrom({
        KAS_OIDC_ISSUER: idp.issuer,
        KAS_OIDC_AUDIENCE: 'someone-else',
        KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
      }),
      t.deps.outbound.fetch,
    )!;
    expect((await errorOf(other.verify(token))).detail).toContain('"aud"');

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 3 * 3_600_000);
    try {
      const expired = await errorOf(t.caller(token).apiKeys.me({}));
      expect(expired).toMatchObject({ status: 401, error_code: 'UNAUTHENTICATED' });
      expect(expired.detail).toContain('expired');
    } finally {
      vi.useRealTimers();
    }
  });
});
