import { beforeAll, describe, expect, it } from 'vitest';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as userGroupsService from './user-groups.service.ts';

const t = useTestRuntime();
type Key = { key: string; user_id: string; api_key_id: number };
let alice: Key;
let bob: Key;
let carol: Key;

beforeAll(async () => {
  alice = await t.createKey('basic', 'alice');
  bob = await t.createKey('basic', 'bob');
  carol = await t.createKey('basic', 'carol');
});

describe('user groups', () => {
  it('creates, lists, updates and deletes groups as an admin', async () => {
    const admin = t.caller(t.adminKey);
    const group = await admin.userGroups.create({
      name: 'engineering',
      user_ids: [alice.user_id, bob.user_id],
    });
    expect(group).toMatchObject({ name: 'engineering', curator_ids: [] });
    expect(group.users.map((u) => u.id).sort()).toEqual([alice.user_id, bob.user_id].sort());
    expect(group.users[0]).toEqual({
      id: expect.any(String),
      email: expect.any(String),
      role: 'basic',
      account_type: 'service_account',
      is_active: true,
    });
    expect((await admin.userGroups.list({})).map((g) => g.id)).toContain(group.id);

    const updated = await admin.userGroups.update({
      user_group_id: group.id,
      name: 'eng',
      user_ids: [bob.user_id, carol.user_id],
    });
    expect(updated.name).toBe('eng');
    expect(updated.users.map((u) => u.id).sort()).toEqual([bob.user_id, carol.user_id].sort());
    expect(await userGroupsService.groupIdsOfUser({ ctx: t.deps, userId: carol.user_id })).toEqual([
      group.id,
    ]);
    expect(await userGroupsService.groupIdsOfUser({ ctx: t.deps, userId: alice.user_id })).toEqual([]);

    await admin.userGroups.delete({ user_group_id: group.id });
    expect((await admin.userGroups.list({})).map((g) => g.id)).not.toContain(group.id);
    expect(await userGroupsService.groupIdsOfUser({ ctx: t.deps, userId: carol.user_id })).toEqual([]);
  });

  it('answers unknown groups with 404, unknown users with 400 and taken names with 409', async () => {
    const admin = t.caller(t.adminKey);
    for (const call of [
      () => admin.userGroups.update({ user_group_id: 98_765, name: 'x' }),
      () => admin.userGroups.delete({ user_group_id: 98_765 }),
      () => admin.userGroups.setCurator({ user_group_id: 98_765, user_id: alice.user_id, is_curator: true }),
    ]) {
      expect(await errorOf(call())).toMatchObject({ status: 404, error_code: 'USER_GROUP_NOT_FOUND' });
    }
    const ghost = '00000000-0000-4000-8000-00000000abcd';
    expect(await errorOf(admin.userGroups.create({ name: 'ghosts', user_ids: [ghost] }))).toMatchObject({
      status: 400,
      detail: `Unknown users: ${ghost}`,
    });
    const group = await admin.userGroups.create({ name: 'taken' });
    expect(await errorOf(admin.userGroups.create({ name: 'taken' }))).toMatchObject({
      status: 409,
      error_code: 'DUPLICATE_RESOURCE',
    });
    expect(
      await errorOf(admin.userGroups.update({ user_group_id: group.id, user_ids: [ghost] })),
    ).toMatchObject({
      status: 400,
    });
    expect(
      await errorOf(
        admin.userGroups.setCurator({ user_group_id: group.id, user_id: alice.user_id, is_curator: true }),
      ),
    ).toMatchObject({ status: 400, detail: expect.stringContaining('not a member') });
    expect((await errorOf(admin.userGroups.create({ name: '  ' }))).error_code).toBe('VALIDATION_ERROR');
  });

  it('makes curators: role promoted and demoted, powers limited to curated groups', async () => {
    const admin = t.caller(t.adminKey);
    const dan = await t.createKey('basic', 'dan');
    const curated = await admin.userGroups.create({
      name: 'curated',
      user_ids: [dan.user_id, alice.user_id],
    });
    const other = await admin.userGroups.create({ name: 'other', user_ids: [bob.user_id] });

    // A basic key cannot reach the group endpoints at all.
    expect(await errorOf(t.caller(dan.key).userGroups.list({}))).toMatchObject({ status: 403 });

    const withCurator = await admin.userGroups.setCurator({
      user_group_id: curated.id,
      user_id: dan.user_id,
      is_curator: true,
    });
    expect(withCurator.curator_ids).toEqual([dan.user_id]);
    const danCaller = t.caller(dan.key);
    expect((await danCaller.userGroups.list({})).map((g) => g.id)).toEqual([curated.id]);

    const changed = await danCaller.userGroups.update({
      user_group_id: curated.id,
      user_ids: [dan.user_id, carol.user_id],
    });
    expect(changed.users.map((u) => u.id).sort()).toEqual([dan.user_id, carol.user_id].sort());
    expect(changed.curator_ids).toEqual([dan.user_id]);
    expect(
      await errorOf(danCaller.userGroups.update({ user_group_id: curated.id, user_ids: [carol.user_id] })),
    ).toMatchObject({ status: 403, detail: expect.stringContaining('curators') });
    expect(
      await errorOf(danCaller.userGroups.update({ user_group_id: other.id, name: 'mine' })),
    ).toMatchObject({
      status: 403,
      error_code: 'INSUFFICIENT_PERMISSIONS',
    });
    expect(await errorOf(danCaller.userGroups.create({ name: 'new' }))).toMatchObject({ status: 403 });
    expect(await errorOf(danCaller.userGroups.delete({ user_group_id: curated.id }))).toMatchObject({
      status: 403,
    });
    expect(
      await errorOf(
        danCaller.userGroups.setCurator({
          user_group_id: curated.id,
          user_id: carol.user_id,
          is_curator: true,
        }),
      ),
    ).toMatchObject({ status: 403 });

    await admin.userGroups.setCurator({ user_group_id: curated.id, user_id: dan.user_id, is_curator: false });
    expect(await errorOf(danCaller.userGroups.list({}))).toMatchObject({ status: 403 });
  });

  it('requires a key (401) and lists users for admins and curators', async () => {
    expect(await errorOf(t.caller().userGroups.list({}))).toMatchObject({ status: 401 });
    expect(await errorOf(t.caller().userGroups.create({ name: 'x' }))).toMatchObject({ status: 401 });
    expect(await errorOf(t.caller().users.list({}))).toMatchObject({ status: 401 });
    expect(await errorOf(t.caller(alice.key).users.list({}))).toMatchObject({ status: 403 });
    const users = await t.caller(t.adminKey).users.list({});
    expect(users).toContainEqual({
      id: alice.user_id,
      email: expect.any(String),
      role: 'basic',
      account_type: 'service_account',
      is_active: true,
    });
  });

  it('deleting a group withdraws the agents shared with it', async () => {
    const admin = t.caller(t.adminKey);
    const group = await admin.userGroups.create({ name: 'agent-readers', user_ids: [bob.user_id] });
    const persona = await t.caller(alice.key).personas.create({
      name: 'for the group',
      description: '',
      system_prompt: '',
      task_prompt: '',
      datetime_aware: false,
      is_public: false,
      document_set_ids: [],
      tool_ids: [],
      groups: [group.id],
    });
    await expect(t.caller(bob.key).personas.get({ persona_id: persona.id })).resolves.toMatchObject({
      groups: [group.id],
    });
    await admin.userGroups.delete({ user_group_id: group.id });
    expect(await errorOf(t.caller(bob.key).personas.get({ persona_id: persona.id }))).toMatchObject({
      status: 404,
      error_code: 'PERSONA_NOT_FOUND',
    });
    expect((await t.caller(alice.key).personas.get({ persona_id: persona.id })).groups).toEqual([]);
  });
});
