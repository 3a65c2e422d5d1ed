import { describe, expect, it } from 'vitest';
import { hashCredential } from '../auth/credential.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';

const t = useTestRuntime();

describe('API keys', () => {
  it('creates a key with its own service-account user, showing the full key once', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.apiKeys.create({ name: 'ci', role: 'basic' });
    expect(created.api_key).toMatch(/^svck-[A-Za-z0-9_-]{43}$/);
    expect(created.api_key_display).toBe(
      `svck-${created.api_key!.slice(5, 9)}****${created.api_key!.slice(-4)}`,
    );
    expect(created).toMatchObject({ api_key_name: 'ci', api_key_role: 'basic' });
    expect(created.user_id).toMatch(/^[0-9a-f-]{36}$/);

    const listed = (await admin.apiKeys.list({})).find((k) => k.api_key_id === created.api_key_id);
    expect(listed).toEqual({
      api_key_id: created.api_key_id,
      api_key_display: created.api_key_display,
      api_key_name: 'ci',
      api_key_role: 'basic',
      user_id: created.user_id,
      expires_at: null,
      allow_personal_tokens: false,
    });
    const other = await admin.apiKeys.create({ role: 'basic' });
    expect(other.user_id).not.toBe(created.user_id);
    expect(other.api_key_name).toBeNull();
  });

  it('stores only the SHA-256 hash of a key', async () => {
    const created = await t.caller(t.adminKey).apiKeys.create({ role: 'basic' });
    const rows = await t.deps.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', created.api_key_id)
      .execute();
    expect(rows[0]!.hashed_key).toBe(hashCredential(created.api_key!));
    expect(JSON.stringify(rows)).not.toContain(created.api_key!.slice(5));
  });

  it('regeneration invalidates the old value on the very next request', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.apiKeys.create({ role: 'admin' });
    await expect(t.caller(created.api_key).apiKeys.list({})).resolves.toBeInstanceOf(Array);
    const regenerated = await admin.apiKeys.regenerate({ api_key_id: created.api_key_id });
    expect(regenerated.api_key).not.toBe(created.api_key);
    expect(regenerated.user_id).toBe(created.user_id);
    expect((await errorOf(t.caller(created.api_key).apiKeys.list({}))).error_code).toBe('UNAUTHENTICATED');
    await expect(t.caller(regenerated.api_key).apiKeys.list({})).resolves.toBeInstanceOf(Array);
  });

  it('role changes and renames take effect at once', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.apiKeys.create({ name: 'a', role: 'admin' });
    const updated = await admin.apiKeys.update({ api_key_id: created.api_key_id, name: 'b', role: 'basic' });
    expect(updated).toMatchObject({ api_key_name: 'b', api_key_role: 'basic' });
    expect(updated.api_key).toBeUndefined();
    const error = await errorOf(t.caller(created.api_key).apiKeys.list({}));
    expect(error).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS', status: 403 });
    const onlyRole = await admin.apiKeys.update({ api_key_id: created.api_key_id, role: 'curator' });
    expect(onlyRole).toMatchObject({ api_key_name: 'b', api_key_role: 'curator' });
  });

  it('deletion revokes the key and removes its user', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.apiKeys.create({ role: 'admin' });
    await admin.apiKeys.delete({ api_key_id: created.api_key_id });
    expect((await errorOf(t.caller(created.api_key).apiKeys.list({}))).status).toBe(401);
    const user = await t.deps.db
      .selectFrom('users')
      .select('id')
      .where('id', '=', created.user_id)
      .executeTakeFirst();
    expect(user).toBeUndefined();
  });

  it('unknown ids are 404', async () => {
    const admin = t.caller(t.adminKey);
    for (const call of [
      () => admin.apiKeys.regenerate({ api_key_id: 999_999 }),
      () => admin.apiKeys.update({ api_key_id: 999_999, name: 'x' }),
      () => admin.apiKeys.delete({ api_key_id: 999_999 }),
    ]) {
      expect(await errorOf(call())).toMatchObject({ error_code: 'API_KEY_NOT_FOUND', status: 404 });
    }
  });

  it('requires a valid key (401) and the admin role (403)', async () => {
    const basic = await t.createKey('basic');
    const curator = await t.createKey('curator');
    expect(await errorOf(t.caller().apiKeys.list({}))).toMatchObject({
      status: 401,
      error_code: 'UNAUTHENTICATED',
    });
    expect(await errorOf(t.caller(`svck-${'x'.repeat(43)}`).apiKeys.list({}))).toMatchObject({ status: 401 });
    for (const key of [basic.key, curator.key]) {
      const caller = t.caller(key);
      for (const call of [
        () => caller.apiKeys.list({}),
        () => caller.apiKeys.create({ role: 'admin' }),
        () => caller.apiKeys.regenerate({ api_key_id: basic.api_key_id }),
        () => caller.apiKeys.update({ api_key_id: basic.api_key_id, role: 'admin' }),
        () => caller.apiKeys.delete({ api_key_id: basic.api_key_id }),
      ]) {
        expect(await errorOf(call())).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
      }
    }
  });

  it('the key list reflects every change at once, including role changes made by group curation', async () => {
    const admin = t.caller(t.adminKey);
    const roleOf = async (id: number) => (await admin.apiKeys.list({})).find((k) => k.api_key_id === id);
    await admin.apiKeys.list({});
    const created = await admin.apiKeys.create({ name: 'fresh', role: 'basic' });
    expect(await roleOf(created.api_key_id)).toMatchObject({ api_key_name: 'fresh', api_key_role: 'basic' });
    await admin.apiKeys.update({ api_key_id: created.api_key_id, name: 'renamed' });
    expect(await roleOf(created.api_key_id)).toMatchObject({ api_key_name: 'renamed' });
    const regenerated = await admin.apiKeys.regenerate({ api_key_id: created.api_key_id });
    expect((await roleOf(created.api_key_id))?.api_key_display).toBe(regenerated.api_key_display);
    const group = await admin.userGroups.create({ name: 'list-cache group', user_ids: [created.user_id] });
    await admin.userGroups.setCurator({
      user_group_id: group.id,
      user_id: created.user_id,
      is_curator: true,
    });
    expect(await roleOf(created.api_key_id)).toMatchObject({ api_key_role: 'curator' });
    await admin.apiKeys.delete({ api_key_id: created.api_key_id });
    expect(await roleOf(created.api_key_id)).toBeUndefined();
  });

  it('tells any caller who it is, and nobody without a key', async () => {
    const basic = await t.createKey('basic');
    expect(await t.caller(basic.key).apiKeys.me({})).toEqual({
      user_id: basic.user_id,
      role: 'basic',
      api_key_id: basic.api_key_id,
      email: expect.stringMatching(/@service-account\.kas$/),
      credential: 'api_key',
    });
    expect(await errorOf(t.caller().apiKeys.me({}))).toMatchObject({ status: 401 });
  });

  it('rejects invalid input', async () => {
    const admin = t.caller(t.adminKey);
    const error = await errorOf(admin.apiKeys.create({ role: 'owner' as never }));
    expect(error.error_code).toBe('VALIDATION_ERROR');
  });
});
