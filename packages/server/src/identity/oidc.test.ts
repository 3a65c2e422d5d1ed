import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeOidcProvider, startFakeOidcProvider } from '../../../../test/fakes/oidc-provider.ts';
import * as apiKeysService from '../api-keys/api-keys.service.ts';
import { configFrom } from '../config.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { authenticateOidc } from './oidc.service.ts';
import { createOidcVerifier } from './oidc.ts';

let idp: FakeOidcProvider;
beforeAll(async () => {
  idp = await startFakeOidcProvider({
    alice: { email: 'Alice@Corp.example' },
    root: { email: 'root@corp.example' },
    cora: { email: 'cora@corp.example', groups: ['kas-curators'] },
    eve: { email: 'eve@corp.example', email_verified: false },
    dana: { email: 'dana@corp.example' },
  });
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
    const actor = await apiKeysService.authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
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
