import { beforeAll, describe, expect, it } from 'vitest';
import { type Actor, apiKeyActor } from '../auth/roles.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import type { CreatePersonaInput } from './personas.schemas.ts';
import * as personasService from './personas.service.ts';

// The models these tests give agents are ones any user may pick.
const t = useTestRuntime({ KAS_LLM_MODELS: 'gpt-4o, m, v' });
type Key = { key: string; user_id: string; api_key_id: number };
let alice: Key;
let bob: Key;
let carol: Key;

beforeAll(async () => {
  alice = await t.createKey('basic', 'alice');
  bob = await t.createKey('basic', 'bob');
  carol = await t.createKey('curator', 'carol');
});

function agent(overrides: Partial<CreatePersonaInput> = {}): CreatePersonaInput {
  return {
    name: 'Agent',
    description: 'An agent',
    system_prompt: 'You are helpful.',
    task_prompt: 'Answer briefly.',
    datetime_aware: true,
    replace_base_system_prompt: false,
    is_public: false,
    is_featured: false,
    document_set_ids: [],
    tool_ids: [],
    ...overrides,
  };
}

async function visibleIds(key: string, query: Record<string, unknown> = {}) {
  const page = await t.caller(key).personas.list({ page_size: 1000, ...query });
  return page.items.map((p) => p.id);
}

async function insertDocumentSet(name: string, isPublic: boolean) {
  const row = await t.deps.db
    .insertInto('document_sets')
    .values({ name, is_public: isPublic, description: `${name} docs` })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function createGroup(name: string, members: Key[], curators: Key[] = []) {
  const admin = t.caller(t.adminKey);
  const group = await admin.userGroups.create({ name, user_ids: members.map((m) => m.user_id) });
  for (const curator of curators) {
    await admin.userGroups.setCurator({
      user_group_id: group.id,
      user_id: curator.user_id,
      is_curator: true,
    });
  }
  return group.id;
}

describe('agents (personas)', () => {
  it('creates an agent with every field stored and returned; user-created ids start at 1', async () => {
    const label = await t.caller(alice.key).personas.labels.create({ name: 'engineering' });
    const setId = await insertDocumentSet('handbook', true);
    const groupId = await createGroup('readers', [bob]);
    const created = await t.caller(alice.key).personas.create(
      agent({
        name: 'Full agent',
        replace_base_system_prompt: true,
        datetime_aware: false,
        document_set_ids: [setId],
        tool_ids: [1],
        llm_model_provider_override: 'openai',
        llm_model_version_override: 'gpt-4o',
        starter_messages: [{ name: 'Hi', description: 'Say hi', message: 'Hello!' }],
        users: [bob.user_id],
        groups: [groupId],
        search_start_date: '2024-05-01T00:00:00',
        label_ids: [label.id],
        display_priority: 5,
        hierarchy_node_ids: [7, 3],
        document_ids: ['doc-b', 'doc-a'],
        user_file_ids: [],
      }),
    );
    expect(created.id).toBe(1);
    expect(created).toMatchObject({
      name: 'Full agent',
      description: 'An agent',
      system_prompt: 'You are helpful.',
      task_prompt: 'Answer briefly.',
      datetime_aware: false,
      replace_base_system_prompt: true,
      is_public: false,
      is_listed: true,
      is_featured: false,
      builtin_persona: false,
      display_priority: 5,
      llm_model_provider_override: 'openai',
      llm_model_version_override: 'gpt-4o',
      starter_messages: [{ name: 'Hi', description: 'Say hi', message: 'Hello!' }],
      users: [{ id: bob.user_id, email: expect.any(String) }],
      groups: [groupId],
      labels: [{ id: label.id, name: 'engineering' }],
      hierarchy_node_ids: [3, 7],
      document_ids: ['doc-a', 'doc-b'],
      user_file_ids: [],
      owner: { id: alice.user_id, email: expect.any(String) },
      deleted: false,
    });
    expect(created.tools).toEqual([
      expect.objectContaining({ id: 1, name: 'internal_search', display_name: 'Search' }),
    ]);
    expect(created.document_sets).toEqual([
      { id: setId, name: 'handbook', description: 'handbook docs', is_public: true },
    ]);
    expect(created).not.toHaveProperty('search_start_date');

    const full = await t.caller(alice.key).personas.get({ persona_id: created.id });
    expect(full).toEqual({ ...created, search_start_date: '2024-05-01T00:00:00.000Z', search_mode: null });
  });

  it('has the built-in default agent 0, listed, featured, with the search tool, undeletable', async () => {
    const page = await t.caller(bob.key).personas.list({});
    const zero = page.items.find((p) => p.id === 0);
    expect(zero).toMatchObject({
      name: 'Assistant',
      builtin_persona: true,
      is_listed: true,
      is_featured: true,
      is_public: true,
      owner: null,
    });
    expect(zero!.tools.map((tool) => tool.in_code_tool_id)).toEqual(['SearchTool']);
    expect((await t.caller(bob.key).personas.get({ persona_id: 0 })).id).toBe(0);
    expect(await errorOf(t.caller(bob.key).personas.delete({ persona_id: 0 }))).toMatchObject({
      status: 403,
      error_code: 'INSUFFICIENT_PERMISSIONS',
    });
    expect(await errorOf(t.caller(t.adminKey).personas.delete({ persona_id: 0 }))).toMatchObject({
      status: 400,
      detail: 'Built-in agents cannot be deleted',
    });
    expect(await visibleIds(bob.key, { include_default: false })).not.toContain(0);
    expect(await visibleIds(bob.key)).toContain(0);
  });

  it('shows an agent to its owner, listed users, members of listed groups and admins only', async () => {
    const dave = await t.createKey('basic', 'dave');
    const erin = await t.createKey('basic', 'erin');
    const groupId = await createGroup('vis-group', [erin]);
    const owner = t.caller(alice.key);
    const priv = await owner.personas.create(agent({ name: 'private' }));
    const toUser = await owner.personas.create(agent({ name: 'to dave', users: [dave.user_id] }));
    const toGroup = await owner.personas.create(agent({ name: 'to group', groups: [groupId] }));
    const pub = await owner.personas.create(agent({ name: 'public', is_public: true }));
    const all = [priv.id, toUser.id, toGroup.id, pub.id];

    const expectVisible = async (key: Key | string, ids: number[]) => {
      const k = typeof key === 'string' ? key : key.key;
      const listed = await visibleIds(k);
      for (const id of all) {
        expect(listed.includes(id), `list ${id}`).toBe(ids.includes(id));
        if (ids.includes(id)) {
          await expect(t.caller(k).personas.get({ persona_id: id })).resolves.toMatchObject({ id });
        } else {
          // An agent the caller may not see answers exactly like an absent one.
          expect(await errorOf(t.caller(k).personas.get({ persona_id: id }))).toMatchObject({
            status: 404,
            error_code: 'PERSONA_NOT_FOUND',
            detail: `Agent (persona) ${id} not found`,
          });
        }
      }
    };
    await expectVisible(alice, all);
    await expectVisible(t.adminKey, all);
    await expectVisible(bob, [pub.id]);
    await expectVisible(dave, [toUser.id, pub.id]);
    await expectVisible(erin, [toGroup.id, pub.id]);

    // Unlisted agents leave other users' lists but stay reachable by id; the owner still lists them.
    await t.caller(t.adminKey).personas.setListed({ persona_id: pub.id, is_listed: false });
    expect(await visibleIds(bob.key)).not.toContain(pub.id);
    await expect(t.caller(bob.key).personas.get({ persona_id: pub.id })).resolves.toMatchObject({
      is_listed: false,
    });
    expect(await visibleIds(alice.key)).toContain(pub.id);
  });

  it('lets the owner, a curator of all its groups and admins update, nobody else', async () => {
    const g1 = await createGroup('edit-g1', [carol, bob], [carol]);
    const g2 = await createGroup('edit-g2', [bob]);
    const owned = await t
      .caller(alice.key)
      .personas.create(agent({ name: 'edit me', groups: [g1], users: [bob.user_id] }));

    expect(
      await errorOf(t.caller(bob.key).personas.update({ persona_id: owned.id, name: 'x' })),
    ).toMatchObject({
      status: 403,
      error_code: 'INSUFFICIENT_PERMISSIONS',
    });
    const byOwner = await t.caller(alice.key).personas.update({ persona_id: owned.id, description: 'new' });
    expect(byOwner).toMatchObject({ name: 'edit me', description: 'new', groups: [g1] });
    const byCurator = await t.caller(carol.key).personas.update({ persona_id: owned.id, name: 'curated' });
    expect(byCurator.name).toBe('curated');
    const byAdmin = await t
      .caller(t.adminKey)
      .personas.update({ persona_id: owned.id, task_prompt: 'admin' });
    expect(byAdmin.task_prompt).toBe('admin');

    // Shared with a group carol does not curate as well: no longer hers to edit.
    await t.caller(alice.key).personas.update({ persona_id: owned.id, groups: [g1, g2] });
    expect(
      await errorOf(t.caller(carol.key).personas.update({ persona_id: owned.id, name: 'y' })),
    ).toMatchObject({
      status: 403,
    });
    expect(await visibleIds(carol.key, { get_editable: true })).not.toContain(owned.id);
    expect(await visibleIds(alice.key, { get_editable: true })).toContain(owned.id);
    expect(await visibleIds(bob.key, { get_editable: true })).not.toContain(owned.id);
    expect(await visibleIds(bob.key)).toContain(owned.id);

    expect(
      await errorOf(t.caller(alice.key).personas.update({ persona_id: 99_999, name: 'z' })),
    ).toMatchObject({
      status: 404,
      error_code: 'PERSONA_NOT_FOUND',
    });
  });

  it('keeps display_priority, builtin_persona, omitted fields and null label_ids on update', async () => {
    const label = await t.caller(alice.key).personas.labels.create({ name: 'keep-me' });
    const created = await t.caller(alice.key).personas.create(
      agent({
        display_priority: 3,
        label_ids: [label.id],
        starter_messages: [{ name: 'a', message: 'b' }],
      }),
    );
    const updated = await t.caller(alice.key).personas.update({
      ...agent({ name: 'renamed', display_priority: 99 }),
      builtin_persona: true,
      label_ids: null,
      persona_id: created.id,
    } as never);
    expect(updated).toMatchObject({
      name: 'renamed',
      display_priority: 3,
      builtin_persona: false,
      labels: [{ id: label.id, name: 'keep-me' }],
      starter_messages: [{ name: 'a', message: 'b' }],
    });
    const cleared = await t.caller(alice.key).personas.update({
      persona_id: created.id,
      label_ids: [],
      starter_messages: null,
      llm_model_version_override: 'm',
    });
    expect(cleared).toMatchObject({ labels: [], starter_messages: [], llm_model_version_override: 'm' });
  });

  it('reserves featuring for admins', async () => {
    expect(await errorOf(t.caller(alice.key).personas.create(agent({ is_featured: true })))).toMatchObject({
      status: 403,
    });
    const created = await t.caller(alice.key).personas.create(agent());
    expect(
      await errorOf(t.caller(alice.key).personas.update({ persona_id: created.id, is_featured: true })),
    ).toMatchObject({ status: 403 });
    expect(
      await errorOf(t.caller(carol.key).personas.setFeatured({ persona_id: created.id, is_featured: true })),
    ).toMatchObject({
      status: 403,
    });
    const featured = await t
      .caller(t.adminKey)
      .personas.setFeatured({ persona_id: created.id, is_featured: true });
    expect(featured.is_featured).toBe(true);
    // Sending the unchanged value back is not an attempt to feature.
    await expect(
      t.caller(alice.key).personas.update({ persona_id: created.id, is_featured: true, name: 'still' }),
    ).resolves.toMatchObject({ name: 'still', is_featured: true });
  });

  it('soft-deletes: owner or admin only, hidden everywhere, data kept', async () => {
    const created = await t
      .caller(alice.key)
      .personas.create(agent({ name: 'doomed', is_public: true, tool_ids: [1], document_ids: ['d1'] }));
    expect(await errorOf(t.caller(bob.key).personas.delete({ persona_id: created.id }))).toMatchObject({
      status: 403,
      detail: 'You can only delete agents you created',
    });
    await t.caller(alice.key).personas.delete({ persona_id: created.id });
    for (const key of [alice.key, bob.key, t.adminKey]) {
      expect(await visibleIds(key)).not.toContain(created.id);
      expect(
        (await t.caller(t.adminKey).personas.adminList({ page_size: 1000 })).items.map((p) => p.id),
      ).not.toContain(created.id);
      expect(await errorOf(t.caller(key).personas.get({ persona_id: created.id }))).toMatchObject({
        status: 404,
        error_code: 'PERSONA_NOT_FOUND',
      });
    }
    const withDeleted = await t.caller(alice.key).personas.list({ page_size: 1000, include_deleted: true });
    expect(withDeleted.items.find((p) => p.id === created.id)).toMatchObject({
      name: 'doomed',
      deleted: true,
      tools: [expect.objectContaining({ id: 1 })],
    });
    const without = await t.caller(alice.key).personas.list({ page_size: 1000 });
    expect(withDeleted.total_items).toBe(without.total_items + 1);
    expect(await errorOf(t.caller(alice.key).personas.delete({ persona_id: created.id }))).toMatchObject({
      status: 404,
    });
    expect(
      await errorOf(t.caller(alice.key).personas.update({ persona_id: created.id, name: 'x' })),
    ).toMatchObject({
      status: 404,
    });

    expect(await errorOf(t.caller(alice.key).personas.undelete({ persona_id: created.id }))).toMatchObject({
      status: 403,
    });
    const restored = await t.caller(t.adminKey).personas.undelete({ persona_id: created.id });
    expect(restored).toMatchObject({ id: created.id, deleted: false, document_ids: ['d1'] });
    expect(await visibleIds(bob.key)).toContain(created.id);
    expect(await errorOf(t.caller(t.adminKey).personas.undelete({ persona_id: created.id }))).toMatchObject({
      status: 400,
    });
    expect(await errorOf(t.caller(t.adminKey).personas.undelete({ persona_id: 123_456 }))).toMatchObject({
      status: 404,
    });

    const other = await t.caller(alice.key).personas.create(agent());
    await t.caller(t.adminKey).personas.delete({ persona_id: other.id });
    expect(await visibleIds(alice.key)).not.toContain(other.id);
  });

  it('rejects unknown references with 400 naming them, and user files while user knowledge is off', async () => {
    const privateSet = await insertDocumentSet('secret', false);
    const error = await errorOf(
      t.caller(alice.key).personas.create(
        agent({
          document_set_ids: [424_242, privateSet],
          tool_ids: [1, 777],
          label_ids: [888],
          users: ['00000000-0000-4000-8000-000000000001'],
          groups: [999],
        }),
      ),
    );
    expect(error).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    for (const fragment of [
      `document sets: 424242, ${privateSet}`,
      'tools: 777',
      'labels: 888',
      'users: 00000000-0000-4000-8000-000000000001',
      'user groups: 999',
    ]) {
      expect(error.detail).toContain(fragment);
    }
    expect(
      await errorOf(t.caller(alice.key).personas.create(agent({ user_file_ids: ['f-1'] }))),
    ).toMatchObject({ status: 400, detail: expect.stringContaining('user knowledge is disabled') });
    const created = await t.caller(alice.key).personas.create(agent());
    expect(
      await errorOf(t.caller(alice.key).personas.update({ persona_id: created.id, tool_ids: [5555] })),
    ).toMatchObject({ status: 400, detail: 'Unknown tools: 5555' });

    // Admins may use any document set; others the ones shared with them or their groups.
    await expect(
      t.caller(t.adminKey).personas.create(agent({ document_set_ids: [privateSet] })),
    ).resolves.toMatchObject({ document_sets: [expect.objectContaining({ id: privateSet })] });
    const groupId = await createGroup('secret-readers', [bob]);
    await t.deps.db
      .insertInto('document_set_groups')
      .values({ document_set_id: privateSet, group_id: groupId })
      .execute();
    await expect(
      t.caller(bob.key).personas.create(agent({ document_set_ids: [privateSet] })),
    ).resolves.toBeDefined();
    expect(
      await errorOf(t.caller(alice.key).personas.create(agent({ document_set_ids: [privateSet] }))),
    ).toMatchObject({
      status: 400,
    });
  });

  it('rejects malformed input', async () => {
    const caller = t.caller(alice.key);
    expect((await errorOf(caller.personas.create({ ...agent(), name: '' }))).error_code).toBe(
      'VALIDATION_ERROR',
    );
    expect(
      (await errorOf(caller.personas.create({ ...agent(), tool_ids: undefined } as never))).error_code,
    ).toBe('VALIDATION_ERROR');
    expect(
      (await errorOf(caller.personas.create(agent({ search_start_date: 'yesterday' })))).error_code,
    ).toBe('VALIDATION_ERROR');
    expect((await errorOf(caller.personas.create(agent({ users: ['not-a-uuid'] })))).error_code).toBe(
      'VALIDATION_ERROR',
    );
    for (const page_size of [0, 1001]) {
      expect((await errorOf(caller.personas.list({ page_size }))).error_code).toBe('VALIDATION_ERROR');
    }
    expect((await errorOf(caller.personas.list({ page_num: -1 }))).error_code).toBe('VALIDATION_ERROR');
  });

  it('requires an API key everywhere and admin or curator for the admin list', async () => {
    const anonymous = t.caller();
    for (const call of [
      () => anonymous.personas.list({}),
      () => anonymous.personas.get({ persona_id: 0 }),
      () => anonymous.personas.create(agent()),
      () => anonymous.personas.update({ persona_id: 0, name: 'x' }),
      () => anonymous.personas.delete({ persona_id: 0 }),
      () => anonymous.personas.adminList({}),
      () => anonymous.personas.labels.list({}),
      () => anonymous.tools.list({}),
    ]) {
      expect(await errorOf(call())).toMatchObject({ status: 401, error_code: 'UNAUTHENTICATED' });
    }
    expect(await errorOf(t.caller(alice.key).personas.adminList({}))).toMatchObject({ status: 403 });
    expect(
      await errorOf(t.caller(alice.key).personas.setDisplayPriorities({ display_priority_map: { '0': 1 } })),
    ).toMatchObject({ status: 403 });
    expect(
      await errorOf(t.caller(alice.key).personas.setListed({ persona_id: 0, is_listed: false })),
    ).toMatchObject({
      status: 403,
    });
    const asCurator = await t.caller(carol.key).personas.adminList({ page_size: 1000 });
    expect(asCurator.items.map((p) => p.id)).toEqual(await visibleIds(carol.key));
  });

  it('admin list items are full snapshots with sharing', async () => {
    const groupId = await createGroup('admin-list', [bob]);
    const created = await t
      .caller(alice.key)
      .personas.create(agent({ users: [bob.user_id], groups: [groupId] }));
    const page = await t.caller(t.adminKey).personas.adminList({ page_size: 1000 });
    expect(page.items.find((p) => p.id === created.id)).toMatchObject({
      system_prompt: 'You are helpful.',
      users: [{ id: bob.user_id, email: expect.any(String) }],
      groups: [groupId],
      user_file_ids: [],
    });
  });

  it('lets users toggle public on their own agents only', async () => {
    const created = await t.caller(alice.key).personas.create(agent());
    expect(
      await errorOf(t.caller(bob.key).personas.setPublic({ persona_id: created.id, is_public: true })),
    ).toMatchObject({
      status: 404,
      error_code: 'PERSONA_NOT_FOUND',
    });
    await t.caller(alice.key).personas.setPublic({ persona_id: created.id, is_public: true });
    expect(await visibleIds(bob.key)).toContain(created.id);
  });
});

describe('agent pagination and ordering', () => {
  it('pages through every visible agent exactly once, by display_priority (nulls last) then id', async () => {
    const frank = await t.createKey('basic', 'frank');
    const gina = await t.createKey('basic', 'gina');
    const priorities = [
      null,
      2,
      null,
      1,
      5,
      null,
      2,
      0,
      null,
      3,
      1,
      null,
      4,
      2,
      null,
      7,
      null,
      0,
      1,
      null,
      6,
    ];
    const mine: number[] = [];
    for (const [i, display_priority] of priorities.entries()) {
      const created = await t.caller(frank.key).personas.create(agent({ name: `p${i}`, display_priority }));
      mine.push(created.id);
    }
    // Gina's private agents must never show up in Frank's pages.
    const ginas: number[] = [];
    for (let i = 0; i < 3; i++)
      ginas.push((await t.caller(gina.key).personas.create(agent({ name: `g${i}` }))).id);

    const everything = await t.caller(frank.key).personas.list({ page_size: 1000 });
    const seen: typeof everything.items = [];
    for (let page_num = 0; ; page_num++) {
      const page = await t.caller(frank.key).personas.list({ page_num, page_size: 4 });
      expect(page.total_items).toBe(everything.total_items);
      if (page.items.length === 0) break;
      expect(page.items.length).toBeLessThanOrEqual(4);
      seen.push(...page.items);
    }
    expect(seen.map((p) => p.id)).toEqual(everything.items.map((p) => p.id));
    expect(new Set(seen.map((p) => p.id)).size).toBe(seen.length);
    expect(seen.length).toBe(everything.total_items);
    for (const id of mine) expect(seen.filter((p) => p.id === id)).toHaveLength(1);
    for (const id of ginas) expect(seen.map((p) => p.id)).not.toContain(id);

    const key = (p: { display_priority: number | null; id: number }) =>
      [p.display_priority ?? Number.POSITIVE_INFINITY, p.id] as const;
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [key(seen[i - 1]!), key(seen[i]!)];
      expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]), `${a} before ${b}`).toBe(true);
    }
    const beyond = await t.caller(frank.key).personas.list({ page_num: 1000, page_size: 10 });
    expect(beyond).toEqual({ items: [], total_items: everything.total_items });
  });

  it('reorders agents through the display-priority map', async () => {
    const a = await t.caller(alice.key).personas.create(agent({ name: 'ro-a', display_priority: 1 }));
    const b = await t.caller(alice.key).personas.create(agent({ name: 'ro-b', display_priority: 2 }));
    await t.caller(t.adminKey).personas.setDisplayPriorities({
      display_priority_map: { [a.id]: -5, [b.id]: -10 },
    });
    const ids = await visibleIds(alice.key);
    expect(ids.slice(0, 2)).toEqual([b.id, a.id]);

    expect(
      await errorOf(
        t
          .caller(t.adminKey)
          .personas.setDisplayPriorities({ display_priority_map: { [a.id]: 1, 515151: 2 } }),
      ),
    ).toMatchObject({ status: 404, detail: expect.stringContaining('515151') });
    expect(
      await errorOf(
        t.caller(carol.key).personas.setDisplayPriorities({ display_priority_map: { [a.id]: 1 } }),
      ),
    ).toMatchObject({ status: 403, detail: expect.stringContaining(String(a.id)) });
    expect((await t.caller(alice.key).personas.get({ persona_id: a.id })).display_priority).toBe(-5);
  });
});

describe('agent labels', () => {
  it('lets anyone create and list labels, and only admins rename or delete them', async () => {
    const label = await t.caller(bob.key).personas.labels.create({ name: 'sales' });
    expect(await t.caller(alice.key).personas.labels.list({})).toContainEqual(label);
    expect(await errorOf(t.caller(alice.key).personas.labels.create({ name: 'sales' }))).toMatchObject({
      status: 409,
      error_code: 'DUPLICATE_RESOURCE',
    });
    expect(
      await errorOf(t.caller(bob.key).personas.labels.update({ label_id: label.id, label_name: 'x' })),
    ).toMatchObject({ status: 403 });
    expect(await errorOf(t.caller(bob.key).personas.labels.delete({ label_id: label.id }))).toMatchObject({
      status: 403,
    });
    const created = await t.caller(bob.key).personas.create(agent({ label_ids: [label.id] }));
    const renamed = await t
      .caller(t.adminKey)
      .personas.labels.update({ label_id: label.id, label_name: 'revenue' });
    expect(renamed).toEqual({ id: label.id, name: 'revenue' });
    expect((await t.caller(bob.key).personas.get({ persona_id: created.id })).labels).toEqual([renamed]);
    await t.caller(t.adminKey).personas.labels.delete({ label_id: label.id });
    expect((await t.caller(bob.key).personas.get({ persona_id: created.id })).labels).toEqual([]);
    for (const call of [
      () => t.caller(t.adminKey).personas.labels.delete({ label_id: label.id }),
      () => t.caller(t.adminKey).personas.labels.update({ label_id: label.id, label_name: 'y' }),
    ]) {
      expect(await errorOf(call())).toMatchObject({ status: 404, error_code: 'LABEL_NOT_FOUND' });
    }
  });
});

describe('tools', () => {
  it('lists the built-in search tool to any user', async () => {
    const tools = await t.caller(bob.key).tools.list({});
    expect(tools).toContainEqual({
      id: 1,
      name: 'internal_search',
      display_name: 'Search',
      description: expect.any(String),
      kind: 'builtin',
      in_code_tool_id: 'SearchTool',
      mcp_server_id: null,
      enabled: true,
    });
  });
});

describe('getPersonaForChat', () => {
  const actorOf = (key: Key, role: Actor['role'] = 'basic'): Actor =>
    apiKeyActor({
      user_id: key.user_id,
      role,
      api_key_id: key.api_key_id,
    });

  it('returns everything chat needs for an agent the actor may use', async () => {
    const setId = await insertDocumentSet('chat-set', true);
    const created = await t.caller(alice.key).personas.create(
      agent({
        name: 'Chatty',
        document_set_ids: [setId],
        tool_ids: [1],
        search_start_date: '2023-01-02',
        llm_model_provider_override: 'p',
        llm_model_version_override: 'v',
        document_ids: ['x'],
        hierarchy_node_ids: [9],
      }),
    );
    const persona = await personasService.getPersonaForChat({
      ctx: { db: t.deps.db, actor: actorOf(alice) },
      personaId: created.id,
    });
    expect(persona).toMatchObject({
      id: created.id,
      name: 'Chatty',
      system_prompt: 'You are helpful.',
      task_prompt: 'Answer briefly.',
      datetime_aware: true,
      replace_base_system_prompt: false,
      tool_ids: [1],
      document_set_ids: [setId],
      document_sets: [expect.objectContaining({ id: setId, name: 'chat-set' })],
      search_start_date: '2023-01-02T00:00:00.000Z',
      llm_model_provider_override: 'p',
      llm_model_version_override: 'v',
      document_ids: ['x'],
      hierarchy_node_ids: [9],
      user_file_ids: [],
    });
    const zero = await personasService.getPersonaForChat({
      ctx: { db: t.deps.db, actor: actorOf(bob) },
      personaId: 0,
    });
    expect(zero).toMatchObject({ id: 0, builtin_persona: true, tool_ids: [1] });

    const error = await errorOf(
      personasService.getPersonaForChat({
        ctx: { db: t.deps.db, actor: actorOf(bob) },
        personaId: created.id,
      }),
    );
    expect(error).toMatchObject({ status: 404, error_code: 'PERSONA_NOT_FOUND' });
    expect(error.detail).toBe(`Agent (persona) ${created.id} not found`);

    await t.caller(alice.key).personas.delete({ persona_id: created.id });
    expect(
      await errorOf(
        personasService.getPersonaForChat({
          ctx: { db: t.deps.db, actor: actorOf(alice) },
          personaId: created.id,
        }),
      ),
    ).toMatchObject({ status: 404, error_code: 'PERSONA_NOT_FOUND' });
  });
});
