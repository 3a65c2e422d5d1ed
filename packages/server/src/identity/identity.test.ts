import { afterAll, describe, expect, it, vi } from 'vitest';
import { authenticate } from '../auth/authenticate.ts';
import { hashCredential } from '../auth/credential.ts';
import * as documentsService from '../documents/documents.service.ts';
import type { CreatePersonaInput } from '../personas/personas.schemas.ts';
import * as searchService from '../search/search.service.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as usersService from '../users/users.service.ts';
import * as identityService from './identity.service.ts';
import { emailPrincipal, groupPrincipal, userPrincipal } from './principals.ts';

const t = useTestRuntime();
afterAll(() => {
  vi.useRealTimers();
});

const agent = (over: Partial<CreatePersonaInput>): CreatePersonaInput => ({
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
  ...over,
});

let n = 0;
async function person(role: 'limited' | 'basic' | 'curator' | 'admin' = 'basic') {
  n += 1;
  const user = await usersService.createPerson({ ctx: t.deps, email: `Person${n}@Example.com`, role });
  const created = await identityService.createPersonalToken({
    ctx: t.deps,
    userId: user.id,
    input: { name: 'laptop' },
  });
  return { ...user, token: created.token!, token_id: created.id };
}

describe('users', () => {
  it('keeps emails unique without regard to case', async () => {
    await usersService.createPerson({ ctx: t.deps, email: 'Dup@Example.com', role: 'basic' });
    const error = await errorOf(
      usersService.createPerson({ ctx: t.deps, email: 'dup@example.COM', role: 'basic' }),
    );
    expect(error).toMatchObject({ error_code: 'DUPLICATE_RESOURCE', status: 409 });
  });

  it('invites by email, pages and searches, and lets only admins manage people', async () => {
    const admin = t.caller(t.adminKey);
    const invited = await admin.users.invite({
      emails: ['Zed@Corp.example', 'yan@corp.example'],
      role: 'curator',
    });
    expect(invited.map((u) => [u.email, u.role, u.account_type, u.is_active])).toEqual([
      ['zed@corp.example', 'curator', 'person', true],
      ['yan@corp.example', 'curator', 'person', true],
    ]);
    const page = await admin.users.page({ q: 'CORP.example', page_num: 0, page_size: 1 });
    expect(page.total_items).toBe(2);
    expect(page.items.map((u) => u.email)).toEqual(['yan@corp.example']);
    const second = await admin.users.page({ q: 'corp.example', page_num: 1, page_size: 1 });
    expect(second.items.map((u) => u.email)).toEqual(['zed@corp.example']);

    const basic = await person('basic');
    expect(
      await errorOf(t.caller(basic.token).users.invite({ emails: ['x@corp.example'], role: 'basic' })),
    ).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS' });
    expect(
      await errorOf(admin.users.setRole({ user_email: 'nobody@corp.example', new_role: 'admin' })),
    ).toMatchObject({
      error_code: 'USER_NOT_FOUND',
      status: 404,
    });
  });

  it('applies role changes and deactivation on the very next request', async () => {
    const admin = t.caller(t.adminKey);
    const alice = await person('basic');
    const asAlice = () => t.caller(alice.token);
    expect(await errorOf(asAlice().apiKeys.list({}))).toMatchObject({
      error_code: 'INSUFFICIENT_PERMISSIONS',
    });

    await admin.users.setRole({ user_email: alice.email.toUpperCase(), new_role: 'admin' });
    expect(await asAlice().apiKeys.list({})).toEqual(expect.any(Array));
    expect(await asAlice().apiKeys.me({})).toMatchObject({ role: 'admin', credential: 'personal_token' });

    await admin.users.deactivate({ user_email: alice.email });
    const error = await errorOf(asAlice().apiKeys.me({}));
    expect(error).toMatchObject({ error_code: 'UNAUTHENTICATED', status: 401 });
    expect(error.detail).toContain('deactivated');

    await admin.users.activate({ user_email: alice.email });
    expect(await asAlice().apiKeys.me({})).toMatchObject({ user_id: alice.id });
  });

  it('refuses to deactivate or delete oneself', async () => {
    const alice = await person('admin');
    const error = await errorOf(t.caller(alice.token).users.deactivate({ user_email: alice.email }));
    expect(error).toMatchObject({ error_code: 'BAD_REQUEST', status: 400 });
    expect(await errorOf(t.caller(alice.token).users.delete({ user_email: alice.email }))).toMatchObject({
      error_code: 'BAD_REQUEST',
    });
  });

  it('deletes a person with their chats and tokens, and keeps agents shared with others', async () => {
    const bob = await person('basic');
    const other = await person('basic');
    const asBob = t.caller(bob.token);
    const { chat_session_id } = await asBob.chat.createSession({});
    const mine = await asBob.personas.create(agent({ name: 'private helper' }));
    const shared = await asBob.personas.create(agent({ name: 'shared helper', users: [other.id] }));
    await t.caller(t.adminKey).users.delete({ user_email: bob.email });

    expect(await errorOf(asBob.apiKeys.me({}))).toMatchObject({ error_code: 'UNAUTHENTICATED' });
    const db = t.deps.db;
    expect(
      await db.selectFrom('chat_sessions').select('id').where('id', '=', chat_session_id).execute(),
    ).toEqual([]);
    expect(
      await db.selectFrom('personal_access_tokens').select('id').where('id', '=', bob.token_id).execute(),
    ).toEqual([]);
    const left = await db
      .selectFrom('personas')
      .select('id')
      .where('id', 'in', [mine.id, shared.id])
      .execute();
    expect(left.map((r) => r.id)).toEqual([shared.id]);
  });
});

describe('personal access tokens', () => {
  it('are shown once, stored hashed, listed masked, and act as their user', async () => {
    const alice = await person('basic');
    const asAlice = t.caller(alice.token);
    const created = await asAlice.personalTokens.create({ name: 'ci', expiration_days: 30 });
    expect(created.token).toMatch(/^kpat-[A-Za-z0-9_-]{43}$/);
    expect(created.token_display).toMatch(/^kpat-.{4}\*\*\*\*.{4}$/);
    expect(Date.parse(created.expires_at!) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const row = await t.deps.db
      .selectFrom('personal_access_tokens')
      .select('hashed_token')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row.hashed_token).toBe(hashCredential(created.token!));

    const listed = await asAlice.personalTokens.list({});
    expect(listed.map((x) => x.name)).toEqual(['laptop', 'ci']);
    expect(listed.every((x) => x.token === undefined)).toBe(true);
    expect(await t.caller(created.token).apiKeys.me({})).toEqual({
      user_id: alice.id,
      role: 'basic',
      api_key_id: null,
      email: alice.email,
      credential: 'personal_token',
    });
  });

  it("never lists or revokes another user's tokens", async () => {
    const alice = await person('basic');
    const mallory = await person('admin');
    expect((await t.caller(mallory.token).personalTokens.list({})).map((x) => x.id)).toEqual([
      mallory.token_id,
    ]);
    const error = await errorOf(t.caller(mallory.token).personalTokens.revoke({ token_id: alice.token_id }));
    expect(error).toMatchObject({ error_code: 'TOKEN_NOT_FOUND', status: 404 });
    expect(await t.caller(alice.token).apiKeys.me({})).toMatchObject({ user_id: alice.id });

    await t.caller(alice.token).personalTokens.revoke({ token_id: alice.token_id });
    expect(await errorOf(t.caller(alice.token).apiKeys.me({}))).toMatchObject({
      error_code: 'UNAUTHENTICATED',
      detail: 'Invalid personal access token',
    });
  });

  it('401 without a credential', async () => {
    expect(await errorOf(t.caller().personalTokens.list({}))).toMatchObject({
      error_code: 'UNAUTHENTICATED',
    });
  });
});

describe('expiry', () => {
  it('refuses an expired API key or token with 401 saying it expired, even when cached', async () => {
    const admin = t.caller(t.adminKey);
    const key = await admin.apiKeys.create({ name: 'short', role: 'basic', expires_in_days: 1 });
    expect(Date.parse(key.expires_at!)).toBeGreaterThan(Date.now());
    const alice = await person('basic');
    const token = await t.caller(alice.token).personalTokens.create({ name: 'short', expiration_days: 1 });
    expect(await t.caller(key.api_key).apiKeys.me({})).toMatchObject({ credential: 'api_key' });
    expect(await t.caller(token.token!).apiKeys.me({})).toMatchObject({ credential: 'personal_token' });

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    try {
      for (const credential of [key.api_key, token.token]) {
        const error = await errorOf(t.caller(credential).apiKeys.me({}));
        expect(error).toMatchObject({ error_code: 'UNAUTHENTICATED', status: 401 });
        expect(error.detail).toMatch(/expired at/);
      }
      expect(await t.caller(alice.token).apiKeys.me({})).toMatchObject({ user_id: alice.id });
    } finally {
      vi.useRealTimers();
    }

    const updated = await admin.apiKeys.update({ api_key_id: key.api_key_id, expires_in_days: null });
    expect(updated.expires_at).toBeNull();
    expect(await t.caller(key.api_key).apiKeys.me({})).toMatchObject({ credential: 'api_key' });
  });
});

describe('a personal token never outlives or outranks the credential that made it', () => {
  it('refuses a token to an API key (service account) with 403, and lists none for it', async () => {
    const key = await t.createKey('admin');
    const error = await errorOf(t.caller(key.key).personalTokens.create({ name: 'escape hatch' }));
    expect(error).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
    expect(error.detail).toContain('API key');
    expect(await t.caller(key.key).personalTokens.list({})).toEqual([]);
  });

  it("shortens a new token's expiry to its creator's, so a 1-day token cannot make a lasting one", async () => {
    const alice = await person('basic');
    const parent = await t.caller(alice.token).personalTokens.create({ name: 'day', expiration_days: 1 });
    const asParent = t.caller(parent.token);
    const forever = await asParent.personalTokens.create({ name: 'forever' });
    const longer = await asParent.personalTokens.create({ name: 'month', expiration_days: 30 });
    expect(forever.expires_at).toBe(parent.expires_at);
    expect(longer.expires_at).toBe(parent.expires_at);
    // The person's own never-expiring token still makes never-expiring ones.
    expect((await t.caller(alice.token).personalTokens.create({ name: 'own' })).expires_at).toBeNull();

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    try {
      for (const credential of [forever.token, longer.token]) {
        expect(await errorOf(t.caller(credential).apiKeys.me({}))).toMatchObject({ status: 401 });
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it('lets a key mint tokens only while an admin allows it, and ends them when the admin stops it', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.apiKeys.create({ name: 'bot', role: 'basic', expires_in_days: 10 });
    expect(created.allow_personal_tokens).toBe(false);
    const asKey = t.caller(created.api_key);
    const refused = await errorOf(asKey.personalTokens.create({ name: 'refused' }));
    expect(refused).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });

    const allowed = await admin.apiKeys.update({
      api_key_id: created.api_key_id,
      allow_personal_tokens: true,
    });
    expect(allowed).toMatchObject({ allow_personal_tokens: true, expires_at: created.expires_at });
    expect((await admin.apiKeys.list({})).find((k) => k.api_key_id === created.api_key_id)).toMatchObject({
      allow_personal_tokens: true,
    });
    const token = await asKey.personalTokens.create({ name: 'bot token' });
    // Still clamped to the key's expiry.
    expect(token.expires_at).toBe(created.expires_at);
    expect(await t.caller(token.token!).apiKeys.me({})).toMatchObject({
      credential: 'personal_token',
      user_id: created.user_id,
    });
    expect((await asKey.personalTokens.list({})).map((x) => x.id)).toEqual([token.id]);

    await admin.apiKeys.update({ api_key_id: created.api_key_id, allow_personal_tokens: false });
    expect(await errorOf(t.caller(token.token!).apiKeys.me({}))).toMatchObject({
      status: 401,
      error_code: 'UNAUTHENTICATED',
    });
    expect(await errorOf(asKey.personalTokens.create({ name: 'again' }))).toMatchObject({ status: 403 });
    // The key itself keeps working.
    expect(await asKey.apiKeys.me({})).toMatchObject({ credential: 'api_key' });

    // Allowed from creation on.
    const open = await admin.apiKeys.create({ role: 'basic', allow_personal_tokens: true });
    expect(open.allow_personal_tokens).toBe(true);
    const openToken = await t.caller(open.api_key).personalTokens.create({ name: 'ok' });
    expect(await t.caller(openToken.token!).apiKeys.me({})).toMatchObject({ credential: 'personal_token' });
  });

  it('lets only an admin set allow_personal_tokens on a key', async () => {
    const key = await t.createKey('basic');
    const curator = await t.createKey('curator');
    for (const caller of [t.caller(curator.key), t.caller(key.key)]) {
      const error = await errorOf(
        caller.apiKeys.update({ api_key_id: key.api_key_id, allow_personal_tokens: true }),
      );
      expect(error).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
      const created = await errorOf(caller.apiKeys.create({ role: 'basic', allow_personal_tokens: true }));
      expect(created).toMatchObject({ status: 403, error_code: 'INSUFFICIENT_PERMISSIONS' });
    }
    expect(await errorOf(t.caller(key.key).personalTokens.create({ name: 'x' }))).toMatchObject({
      status: 403,
    });
  });

  it('ends a token minted by an API key when the key is regenerated, expires or is deleted', async () => {
    const admin = t.caller(t.adminKey);
    const mint = async (key: { key: string; api_key_id: number }) => {
      await admin.apiKeys.update({ api_key_id: key.api_key_id, allow_personal_tokens: true });
      const { token } = await t.caller(key.key).personalTokens.create({ name: 'minted' });
      expect(await t.caller(token!).apiKeys.me({})).toMatchObject({ credential: 'personal_token' });
      return token!;
    };
    const refused = async (token: string) =>
      expect(await errorOf(t.caller(token).apiKeys.me({}))).toMatchObject({
        status: 401,
        error_code: 'UNAUTHENTICATED',
      });

    const regenerated = await t.createKey('basic');
    const beforeRegeneration = await mint(regenerated);
    await admin.apiKeys.regenerate({ api_key_id: regenerated.api_key_id });
    await refused(beforeRegeneration);

    const deleted = await t.createKey('basic');
    const beforeDeletion = await mint(deleted);
    await admin.apiKeys.delete({ api_key_id: deleted.api_key_id });
    await refused(beforeDeletion);

    const expiring = await t.createKey('basic');
    const withExpiringKey = await mint(expiring);
    await admin.apiKeys.update({ api_key_id: expiring.api_key_id, expires_in_days: 1 });
    expect(await t.caller(withExpiringKey).apiKeys.me({})).toMatchObject({ credential: 'personal_token' });
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    try {
      await refused(withExpiringKey);
    } finally {
      vi.useRealTimers();
    }
    // A token it mints is bound to the key too, and refused once the key may no longer mint.
    const child = await t.caller(withExpiringKey).personalTokens.create({ name: 'child' });
    expect(child.expires_at).not.toBeNull();
    await admin.apiKeys.update({ api_key_id: expiring.api_key_id, allow_personal_tokens: false });
    await refused(withExpiringKey);
    await refused(child.token!);
  });
});

describe('limited role', () => {
  it('may chat and read agents, nothing else', async () => {
    const limited = await person('limited');
    const c = t.caller(limited.token);
    await c.chat.createSession({});
    expect(await c.chat.listSessions({})).toMatchObject({ sessions: expect.any(Array) });
    const error = await errorOf(c.personalTokens.list({}).then(() => c.documentSets.list({})));
    expect(error).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS', status: 403 });
  });
});

describe('external principals (permission sync)', () => {
  it('shows a sync document to exactly the users the source lists', async () => {
    const listed = await person('basic');
    const viaGithub = await person('basic');
    const viaGroup = await person('basic');
    const outsider = await person('basic');
    await identityService.linkExternalIdentity({
      ctx: t.deps,
      identity: { user_id: viaGithub.id, source: 'github', external_id: 'octocat' },
    });
    await identityService.linkExternalIdentity({
      ctx: t.deps,
      identity: { user_id: viaGroup.id, source: 'slack', external_id: 'U123' },
    });
    const pair = await documentsService.createCcPair({
      ctx: t.deps,
      input: { name: 'synced drive', access_type: 'sync' },
    });
    await identityService.replaceExternalGroupMembers({
      ctx: t.deps,
      cc_pair_id: pair.cc_pair_id,
      source: 'slack',
      groups: [{ group_id: 'eng', members: [userPrincipal('slack', 'U123')] }],
    });
    await t.caller(t.adminKey).documents.ingest({
      document: {
        id: 'synced-doc',
        semantic_identifier: 'Zeppelin roadmap',
        sections: [{ text: 'The zeppelin roadmap for next year.', link: null }],
      },
      cc_pair_id: pair.cc_pair_id,
    } as never);
    await identityService.setDocumentExternalAccess({
      ctx: t.deps,
      entries: [
        {
          document_id: 'synced-doc',
          principals: [
            emailPrincipal(listed.email),
            userPrincipal('github', 'octocat'),
            groupPrincipal('slack', 'eng'),
          ],
        },
      ],
    });
    // Chat retrieval calls the same searchChunks, so this is the condition chat applies too.
    const visible = async (token: string) => {
      const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query: 'zeppelin roadmap' });
      return chunks.some((c) => c.document_id === 'synced-doc');
    };
    expect(await visible(listed.token)).toBe(true);
    expect(await visible(viaGithub.token)).toBe(true);
    expect(await visible(viaGroup.token)).toBe(true);
    expect(await visible(outsider.token)).toBe(false);

    // The next sync drops the group membership: the member no longer sees the document.
    await identityService.replaceExternalGroupMembers({
      ctx: t.deps,
      cc_pair_id: pair.cc_pair_id,
      source: 'slack',
      groups: [],
    });
    expect(await visible(viaGroup.token)).toBe(false);

    // An admin links and unlinks identities over the API; access follows on the next search.
    const admin = t.caller(t.adminKey);
    const identity = { user_email: outsider.email, source: 'github', external_id: 'octocat' };
    expect(await admin.users.linkExternalIdentity(identity)).toEqual([
      { source: 'github', external_id: 'octocat' },
    ]);
    expect(await visible(outsider.token)).toBe(true);
    expect(await admin.users.listExternalIdentities({ user_email: outsider.email })).toHaveLength(1);
    await admin.users.unlinkExternalIdentity(identity);
    expect(await visible(outsider.token)).toBe(false);
    expect(await errorOf(t.caller(outsider.token).users.linkExternalIdentity(identity))).toMatchObject({
      status: 403,
    });
    expect(
      await errorOf(admin.users.linkExternalIdentity({ ...identity, user_email: 'nobody@example.com' })),
    ).toMatchObject({ status: 404 });
  });
});

describe('people and service accounts own resources alike', () => {
  const refused = async (promise: Promise<unknown>) => {
    const error = await errorOf(promise);
    expect([403, 404]).toContain(error.status);
  };

  it.each([
    ['a person (personal token) against a key', 'person', 'key'],
    ['a key against a person (personal token)', 'key', 'person'],
  ] as const)('never lets another caller touch private resources: %s', async (_, ownerKind, otherKind) => {
    const credential = async (kind: 'person' | 'key') =>
      kind === 'person' ? (await person('basic')).token : (await t.createKey('basic')).key;
    const owner = t.caller(await credential(ownerKind));
    const other = t.caller(await credential(otherKind));

    const { chat_session_id: sessionId } = await owner.chat.createSession({ description: 'private talk' });
    const project = await owner.projects.create({ name: 'secret project' });
    const agent_ = await owner.personas.create(agent({ name: 'secret agent' }));

    await refused(other.chat.getSession({ session_id: sessionId }));
    await refused(other.chat.renameSession({ chat_session_id: sessionId, name: 'mine now' }));
    await refused(other.chat.updateSharing({ session_id: sessionId, sharing_status: 'public' }));
    await refused(other.chat.stopSession({ chat_session_id: sessionId }));
    await refused(other.chat.deleteSession({ session_id: sessionId }));
    expect((await other.chat.listSessions({})).sessions.map((x) => x.id)).not.toContain(sessionId);
    await refused(other.projects.update({ project_id: project.id, name: 'mine now' }));
    await refused(other.projects.delete({ project_id: project.id }));
    expect((await other.projects.list({})).map((x) => x.id)).not.toContain(project.id);
    await refused(other.personas.get({ persona_id: agent_.id }));
    const { files } = await owner.files.upload({
      files: [
        { name: 'notes.txt', content_type: 'text/plain', data: new TextEncoder().encode('owner only notes') },
      ],
    });
    await refused(
      other.chat.sendMessage({
        message: 'what do the notes say?',
        chat_session_info: {},
        file_descriptors: files,
      }),
    );

    const session = await owner.chat.getSession({ session_id: sessionId });
    expect(session).toMatchObject({ description: 'private talk', shared_status: 'private' });
    expect((await owner.projects.list({})).find((x) => x.id === project.id)).toMatchObject({
      name: 'secret project',
    });
    expect(await owner.personas.get({ persona_id: agent_.id })).toMatchObject({ name: 'secret agent' });
  });
});
