import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';
import { apiKeyActor, type Role } from './roles.ts';
import {
  curatesAll,
  curatesAny,
  loadScope,
  memberOfAny,
  notCurated,
  ownsOrAdmin,
  policy,
  type Scope,
} from './scope.ts';

// The one scope rule: who is admin, member of and curator of which groups, and for each kind of
// resource whether a curator needs every group or any (the permission table of docs/security.md).
let t: TestRuntime;

beforeAll(async () => {
  t = await createTestRuntime();
});
afterAll(async () => {
  await t.close();
});

const scope = (over: Partial<Scope> = {}): Scope => ({
  user_id: 'u1',
  admin: false,
  memberOf: new Set(),
  curates: new Set(),
  ...over,
});
const admin = scope({ admin: true });
/** Curates 1 and 2, member of 1, 2 and 3. */
const curator = scope({ memberOf: new Set([1, 2, 3]), curates: new Set([1, 2]) });
const member = scope({ memberOf: new Set([3]) });

describe('loadScope', () => {
  it('reads memberships and curatorships from the database, curatorships only for the curator role', async () => {
    const root = t.caller(t.adminKey);
    const ids: Partial<Record<Role, { user_id: string; api_key_id: number }>> = {};
    for (const role of ['basic', 'curator'] as const) ids[role] = await t.createKey(role, `scope ${role}`);
    const users = [ids.basic!.user_id, ids.curator!.user_id];
    const a = (await root.userGroups.create({ name: 'scope a', user_ids: users })).id;
    const b = (await root.userGroups.create({ name: 'scope b', user_ids: [ids.curator!.user_id] })).id;
    for (const user_id of users)
      await root.userGroups.setCurator({ user_group_id: a, user_id, is_curator: true });

    const actor = (role: Role) => apiKeyActor({ ...ids[role as 'basic']!, role });
    const cur = await loadScope(t.deps.db, actor('curator'));
    expect(cur).toMatchObject({ admin: false, user_id: ids.curator!.user_id });
    expect([...cur.memberOf].sort()).toEqual([a, b].sort());
    expect([...cur.curates]).toEqual([a]);
    // A basic user flagged curator of a group curates nothing: the role decides.
    const basic = await loadScope(t.deps.db, actor('basic'));
    expect([...basic.memberOf]).toEqual([a]);
    expect([...basic.curates]).toEqual([]);
    const root_ = await loadScope(t.deps.db, { ...actor('basic'), role: 'admin' });
    expect(root_.admin).toBe(true);
  });
});

describe('predicates', () => {
  it('curatesAll: every group curated, at least one; admins always', () => {
    expect(curatesAll(curator, [1, 2])).toBe(true);
    expect(curatesAll(curator, [1, 3])).toBe(false);
    expect(curatesAll(curator, [])).toBe(false);
    expect(curatesAll(admin, [])).toBe(true);
    expect(curatesAll(member, [3])).toBe(false);
  });

  it('curatesAny: one group curated is enough; admins always', () => {
    expect(curatesAny(curator, [1, 3])).toBe(true);
    expect(curatesAny(curator, [3])).toBe(false);
    expect(curatesAny(curator, [])).toBe(false);
    expect(curatesAny(admin, [])).toBe(true);
  });

  it('memberOfAny: one group shared is enough; admins always', () => {
    expect(memberOfAny(member, [3, 4])).toBe(true);
    expect(memberOfAny(member, [4])).toBe(false);
    expect(memberOfAny(member, [])).toBe(false);
    expect(memberOfAny(admin, [])).toBe(true);
  });

  it('notCurated names the groups in the way; ownsOrAdmin matches the user', () => {
    expect(notCurated(curator, [1, 3, 4])).toEqual([3, 4]);
    expect(notCurated(admin, [3])).toEqual([]);
    expect(ownsOrAdmin(curator, 'u1')).toBe(true);
    expect(ownsOrAdmin(curator, 'u2')).toBe(false);
    expect(ownsOrAdmin(curator, null)).toBe(false);
    expect(ownsOrAdmin(admin, null)).toBe(true);
  });
});

describe('policy: every group to manage, any group to use', () => {
  it('CC pairs and their documents: every group; a pair without groups is admin-only', () => {
    expect(policy.manageCcPair(curator, { groups: [1, 2] })).toBe(true);
    expect(policy.manageCcPair(curator, { groups: [1, 3] })).toBe(false);
    expect(policy.manageCcPair(curator, { groups: [] })).toBe(false);
    expect(policy.manageCcPair(admin, { groups: [] })).toBe(true);
    expect(policy.manageDocument(curator, [{ groups: [1] }, { groups: [2] }])).toBe(true);
    expect(policy.manageDocument(curator, [{ groups: [1] }, { groups: [] }])).toBe(false);
    expect(policy.manageDocument(curator, [])).toBe(false);
    expect(policy.manageDocument(admin, [{ groups: [] }])).toBe(true);
  });

  it('connectors: every group of their pairs, or their creator before any pair', () => {
    const connector = { group_ids: [1, 2], creator_id: 'u9', credential_ids: [5] };
    expect(policy.manageConnector(curator, connector)).toBe(true);
    expect(policy.manageConnector(curator, { ...connector, group_ids: [1, 3] })).toBe(false);
    expect(policy.manageConnector(curator, { group_ids: [], creator_id: 'u1', credential_ids: [] })).toBe(
      true,
    );
    expect(policy.manageConnector(curator, { group_ids: [], creator_id: 'u1', credential_ids: [5] })).toBe(
      false,
    );
    expect(policy.manageConnector(curator, { group_ids: [], creator_id: 'u9', credential_ids: [] })).toBe(
      false,
    );
  });

  it('credentials: their owner, or every group', () => {
    expect(policy.manageCredential(curator, { user_id: 'u1', groups: [] })).toBe(true);
    expect(policy.manageCredential(curator, { user_id: 'u9', groups: [1] })).toBe(true);
    expect(policy.manageCredential(curator, { user_id: 'u9', groups: [1, 3] })).toBe(false);
    expect(policy.manageCredential(curator, { user_id: 'u9', groups: [] })).toBe(false);
  });

  it('actions and MCP servers: managed with every group, used with any; unscoped ones admin-managed and for all', () => {
    const scoped = { group_scoped: true, groups: [1, 3] };
    expect(policy.manageAction(curator, { group_scoped: true, groups: [1, 2] })).toBe(true);
    expect(policy.manageAction(curator, scoped)).toBe(false);
    expect(policy.manageAction(curator, { group_scoped: false, groups: [] })).toBe(false);
    expect(policy.manageAction(admin, { group_scoped: false, groups: [] })).toBe(true);
    expect(policy.useAction(member, scoped)).toBe(true);
    expect(policy.useAction(scope(), scoped)).toBe(false);
    expect(policy.useAction(scope(), { group_scoped: true, groups: [] })).toBe(false);
    expect(policy.useAction(scope(), { group_scoped: false, groups: [] })).toBe(true);
  });

  it('agents: their owner or every group to edit, any group to view', () => {
    expect(policy.managePersona(curator, { owner_id: 'u1', groups: [] })).toBe(true);
    expect(policy.managePersona(curator, { owner_id: null, groups: [1, 2] })).toBe(true);
    expect(policy.managePersona(curator, { owner_id: null, groups: [1, 3] })).toBe(false);
    expect(policy.viewPersonaThroughGroups(member, { groups: [1, 3] })).toBe(true);
    expect(policy.viewPersonaThroughGroups(member, { groups: [1] })).toBe(false);
  });

  it('document sets: their owner; a set names public pairs or pairs the curator manages', () => {
    expect(policy.manageDocumentSet(curator, { owner_id: 'u1' })).toBe(true);
    expect(policy.manageDocumentSet(curator, { owner_id: 'u9' })).toBe(false);
    expect(policy.referenceCcPair(curator, { access_type: 'public', groups: [] })).toBe(true);
    expect(policy.referenceCcPair(curator, { access_type: 'private', groups: [1] })).toBe(true);
    expect(policy.referenceCcPair(curator, { access_type: 'private', groups: [3] })).toBe(false);
  });

  it('uploads: their uploader (admins any)', () => {
    expect(policy.useUpload(curator, { uploaded_by: 'u1' })).toBe(true);
    expect(policy.useUpload(curator, { uploaded_by: 'u9' })).toBe(false);
    expect(policy.useUpload(curator, { uploaded_by: null })).toBe(false);
    expect(policy.useUpload(admin, { uploaded_by: null })).toBe(true);
  });
});
