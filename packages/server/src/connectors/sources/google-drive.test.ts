import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type FakeDriveFile,
  type FakeGoogle,
  startFakeGoogle,
} from '../../../../../test/fakes/google-drive.ts';
import { authenticate } from '../../auth/authenticate.ts';
import * as identityService from '../../identity/identity.service.ts';
import * as searchService from '../../search/search.service.ts';
import { errorOf } from '../../testing/errors.ts';
import { useTestRuntime } from '../../testing/runtime-fixture.ts';
import * as usersService from '../../users/users.service.ts';
import { connectorTestHelpers } from '../connectors.test-helpers.ts';

const t = useTestRuntime({
  KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
  KAS_OUTBOUND_RETRIES: '2',
  KAS_CONNECTOR_HEARTBEAT_MS: '100',
  KAS_CONNECTOR_BACKOFF_MS: '0',
});
const { admin, pass } = t;
const {
  docIds,
  textOf,
  latestAttempt: lastAttempt,
  settle,
  sourcePair,
  person,
  sees,
  waiting,
} = connectorTestHelpers(t);
let google: FakeGoogle;

beforeAll(async () => {
  google = await startFakeGoogle();
  google.delegatedUsers.add('ann@corp.example');
  google.refreshTokens.set('1//refresh-bob', 'bob@corp.example');
});
afterAll(async () => {
  await google.close();
});
beforeEach(() => {
  google.files.clear();
  google.drives.clear();
  google.groups.clear();
  google.rateLimit.remaining = 0;
});

const docId = (id: string) => `https://drive.google.com/open?id=${id}`;
const OLD = new Date('2026-01-01T00:00:00Z');

function file(id: string, over: Partial<FakeDriveFile> = {}) {
  google.files.set(id, {
    id,
    name: `${id}.txt`,
    mimeType: 'text/plain',
    parents: ['root'],
    owner: 'ann@corp.example',
    modifiedTime: OLD,
    content: `plain text of ${id}`,
    permissions: [{ type: 'user', emailAddress: 'ann@corp.example', role: 'owner' }],
    ...over,
  });
}

/** `prefix` keeps each test's files apart (documents are shared by id across the file's pairs). */
function drive(prefix: string) {
  file(`${prefix}doc`, {
    name: 'Quarterly plan',
    mimeType: 'application/vnd.google-apps.document',
    content: `the ${prefix} pangolin quarterly plan`,
  });
  file(`${prefix}sheet`, {
    name: 'Budget',
    mimeType: 'application/vnd.google-apps.spreadsheet',
    content: `item,cost\n${prefix}-tapir,12`,
  });
  file(`${prefix}slides`, {
    name: 'Kickoff deck',
    mimeType: 'application/vnd.google-apps.presentation',
    content: `kickoff slides about the ${prefix} ibex`,
  });
  file(`${prefix}notes`, {
    name: 'notes.md',
    mimeType: 'text/markdown',
    content: `# ${prefix} markdown notes`,
  });
  file(`${prefix}image`, { name: 'photo.png', mimeType: 'image/png', content: Buffer.from([1, 2, 3]) });
  file(`${prefix}form`, { name: 'Survey', mimeType: 'application/vnd.google-apps.form', content: '' });
  file(`${prefix}bob`, { owner: 'bob@corp.example', content: 'not in ann drive' });
}

const serviceAccount = (impersonate: string | null = 'ann@corp.example') => ({
  google_service_account_key: JSON.stringify(google.serviceAccountKey),
  ...(impersonate ? { google_primary_admin: impersonate } : {}),
});

async function pair(
  config: Record<string, unknown>,
  credential: Record<string, unknown> = serviceAccount(),
  access_type: 'public' | 'sync' = 'public',
  extra: { prune_freq?: number } = {},
) {
  return sourcePair({
    name: 'drive',
    source: 'google_drive',
    accessType: access_type,
    extra,
    config: { base_url: google.url, include_shared_drives: false, ...config },
    credential,
  });
}

describe('google_drive source', () => {
  it('refuses a credential with neither a service account key nor tokens, and a bad folder id', async () => {
    const credential = await errorOf(
      admin().connectors.createCredential({
        source: 'google_drive',
        credential_json: { google_primary_admin: 'x' },
      }),
    );
    expect(credential).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    expect(credential.detail).toContain('google_service_account_key');
    expect(credential.detail).toContain('google_primary_admin');
    const connector = await errorOf(
      admin().connectors.create({
        name: 'bad drive',
        source: 'google_drive',
        input_type: 'poll',
        connector_specific_config: { folder_ids: ['not a folder!'], base_url: 'ftp://x' },
        access_type: 'public',
      }),
    );
    expect(connector).toMatchObject({ status: 400 });
    expect(connector.detail).toContain('connector_specific_config.folder_ids.0');
    expect(connector.detail).toContain('connector_specific_config.base_url');
  });

  it('service account acting as a user: My Drive with Docs, Sheets and Slides exported as text, readable files by type', async () => {
    drive('a');
    const { pairId } = await pair({});
    await pass();
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 4 });
    expect(await docIds(pairId)).toEqual([docId('adoc'), docId('anotes'), docId('asheet'), docId('aslides')]);
    expect(await textOf(docId('adoc'))).toContain('the a pangolin quarterly plan');
    expect(await textOf(docId('asheet'))).toContain('a-tapir,12');
    expect(await textOf(docId('aslides'))).toContain('kickoff slides about the a ibex');
    const hits = await admin().search.adminSearch({ query: 'pangolin quarterly', filters: {} });
    expect(hits.documents[0]).toMatchObject({
      document_id: docId('adoc'),
      semantic_identifier: 'Quarterly plan',
    });
    // The JWT grant acted as Ann (sub) with the read-only Drive scope.
    expect(google.grants.at(-1)).toEqual({
      user: 'ann@corp.example',
      scope: 'https://www.googleapis.com/auth/drive.readonly',
    });
    const details = await admin().connectors.getPair({ cc_pair_id: pairId });
    expect(details.credential.credential_json).toEqual({
      google_service_account_key: '********',
      google_primary_admin: 'ann@corp.example',
    });
  });

  it('OAuth tokens (refresh grant): the token owner’s My Drive; shared drives; folders with subfolders', async () => {
    file('bmine', { owner: 'bob@corp.example', content: 'bob owns the okapi memo' });
    file('bann', { owner: 'ann@corp.example', content: 'ann owns this one' });
    const bob = await pair(
      {},
      {
        google_tokens: { refresh_token: '1//refresh-bob', ...google.oauthClient, token_uri: google.tokenUri },
      },
    );
    await pass();
    expect(await docIds(bob.pairId)).toEqual([docId('bmine')]);

    google.drives.set('drive1', 'Engineering');
    google.drives.set('drive2', 'Sales');
    file('c1', { driveId: 'drive1', parents: ['drive1'], owner: 'x@corp.example' });
    file('c2', { driveId: 'drive2', parents: ['drive2'], owner: 'x@corp.example' });
    file('c3', { driveId: 'drive2', parents: ['drive2'], owner: 'x@corp.example' });
    const shared = await pair({ include_my_drive: false, include_shared_drives: true });
    await pass();
    expect(await docIds(shared.pairId)).toEqual([docId('c1'), docId('c2'), docId('c3')]);
    const one = await pair({
      include_my_drive: false,
      shared_drive_ids: ['drive2'],
      include_shared_drives: true,
    });
    await pass();
    expect(await docIds(one.pairId)).toEqual([docId('c2'), docId('c3')]);

    file('dtop', { parents: ['folderA'] });
    file('dsub', {
      name: 'Sub',
      mimeType: 'application/vnd.google-apps.folder',
      parents: ['folderA'],
      content: '',
    });
    file('ddeep', { parents: ['dsub'], driveId: 'drive1' });
    file('doutside', { parents: ['folderB'] });
    const folders = await pair({ folder_ids: ['https://drive.google.com/drive/folders/folderA'] });
    await pass();
    expect(await docIds(folders.pairId)).toEqual([docId('ddeep'), docId('dtop')]);
  });

  it('fails with a clear reason when Google refuses the credential', async () => {
    file('e1');
    const revoked = await pair(
      {},
      { google_tokens: { refresh_token: 'revoked', ...google.oauthClient, token_uri: google.tokenUri } },
    );
    const notDelegated = await pair({}, serviceAccount('mallory@corp.example'));
    await pass();
    expect(await lastAttempt(revoked.pairId)).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('Google refused the credential (400 invalid_grant)'),
    });
    expect(await lastAttempt(notDelegated.pairId)).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('Google refused the credential (401 unauthorized_client)'),
    });
    for (const id of [revoked.pairId, notDelegated.pairId])
      await admin().connectors.setPairStatus({ cc_pair_id: id, status: 'paused' });
  });

  it('waits out 429 with Retry-After; past the retries the attempt waits until then and resumes', async () => {
    file('f1');
    google.rateLimit = { remaining: 1, retryAfter: 1 };
    const ok = await pair({});
    const started = Date.now();
    await pass();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(await lastAttempt(ok.pairId)).toMatchObject({ status: 'success' });
    google.rateLimit = { remaining: 100, retryAfter: 1 };
    const limited = await pair({});
    await pass();
    // Past the retries the attempt waits in the queue (checkpoint kept, worker free) and resumes then.
    expect(await lastAttempt(limited.pairId)).toMatchObject({ status: 'not_started' });
    const waiting = (await t.admin().connectors.getPair({ cc_pair_id: limited.pairId })).progress;
    expect(waiting?.waiting_reason).toContain('rate limiting');
    expect(new Date(waiting?.waiting_until ?? 0).getTime()).toBeGreaterThan(Date.now() - 1000);
    google.rateLimit.remaining = 0;
    await new Promise((r) => setTimeout(r, 1100));
    await pass();
    expect(await lastAttempt(limited.pairId)).toMatchObject({ status: 'success' });
  }, 30_000);

  it('polls files modified since the last run; a prune run removes deleted and trashed files', async () => {
    file('g1', { parents: ['folderG'], content: 'the gerenuk file' });
    file('g2', { parents: ['folderG'], content: 'the second file' });
    file('g3', { parents: ['folderG'], content: 'the third file' });
    const { connectorId, pairId } = await pair({ folder_ids: ['folderG'] }, undefined, 'public', {
      prune_freq: 300,
    });
    await pass();
    expect(await docIds(pairId)).toEqual([docId('g1'), docId('g2'), docId('g3')]);
    const g2 = google.files.get('g2');
    if (g2) Object.assign(g2, { content: 'the second file, edited', modifiedTime: new Date() });
    google.files.delete('g1');
    const g3 = google.files.get('g3');
    if (g3) g3.trashed = true;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 1 });
    expect(await textOf(docId('g2'))).toContain('edited');
    expect(await docIds(pairId)).toHaveLength(3);
    await sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toEqual([docId('g2')]);
    const rows = await sql<{ id: string }>`
      SELECT id FROM documents WHERE id = ANY(${[docId('g1'), docId('g3')]}::text[])`.execute(t.deps.db);
    expect(rows.rows).toEqual([]);
  });

  it('sync access: Drive permissions (user, Workspace group members, anyone) decide who sees a file', async () => {
    const person = async (email: string) => {
      const user = await usersService.createPerson({ ctx: t.deps, email, role: 'basic' });
      const { token } = await identityService.createPersonalToken({
        ctx: t.deps,
        userId: user.id,
        input: { name: 'laptop' },
      });
      return token as string;
    };
    const ann = await person('Ann@corp.example');
    const gus = await person('gus@corp.example');
    const hal = await person('hal@corp.example');
    google.groups.set('team@corp.example', ['gus@corp.example']);
    // Owned by someone no other pair of this file indexes the My Drive of (those pairs are public).
    file('hshared', {
      owner: 'zoe@corp.example',
      parents: ['folderH'],
      content: 'the narwhal migration plan',
      permissions: [
        { type: 'user', emailAddress: 'ann@corp.example', role: 'owner' },
        { type: 'group', emailAddress: 'team@corp.example', role: 'reader' },
      ],
    });
    file('hdrive', {
      parents: ['folderH'],
      driveId: 'drive9',
      content: 'the narwhal budget in a shared drive',
      permissions: [{ type: 'user', emailAddress: 'hal@corp.example', role: 'reader' }],
    });
    const { connectorId, pairId } = await pair({ folder_ids: ['folderH'] }, undefined, 'sync');
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    const sees = async (token: string) => {
      const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query: 'narwhal migration' });
      return chunks.some((c) => c.document_id === docId('hshared'));
    };
    const halSeesDriveFile = async () => {
      const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${hal}` });
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query: 'narwhal budget' });
      return chunks.some((c) => c.document_id === docId('hdrive'));
    };
    expect(await halSeesDriveFile()).toBe(true);
    expect(await sees(ann)).toBe(true);
    expect(await sees(gus)).toBe(true);
    expect(await sees(hal)).toBe(false);
    // Shared with anyone with the link: public; then back to Ann only (the group grant removed).
    const shared = google.files.get('hshared');
    if (!shared) throw new Error('missing');
    shared.permissions = [...shared.permissions, { type: 'anyone', role: 'reader' }];
    // Sharing does not change modifiedTime: a poll reads no file, the permission sync still applies it.
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await sees(hal)).toBe(true);
    // The group's grant and the link share are removed at the source: the next poll (no file
    // re-read) takes them away. Hal is removed from the shared drive's file as well.
    shared.permissions = [{ type: 'user', emailAddress: 'ann@corp.example', role: 'owner' }];
    const inDrive = google.files.get('hdrive');
    if (!inDrive) throw new Error('missing');
    inDrive.permissions = [];
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await halSeesDriveFile()).toBe(false);
    expect(await sees(hal)).toBe(false);
    expect(await sees(gus)).toBe(false);
    expect(await sees(ann)).toBe(true);
  });

  it("sync access: a domain grant reaches people whose linked Google identity is in that domain; 'anyone' is public", async () => {
    const person = async (email: string, google?: string) => {
      const user = await usersService.createPerson({ ctx: t.deps, email, role: 'basic' });
      if (google)
        await identityService.linkExternalIdentity({
          ctx: t.deps,
          identity: { user_id: user.id, source: 'google_drive', external_id: google },
        });
      const { token } = await identityService.createPersonalToken({
        ctx: t.deps,
        userId: user.id,
        input: { name: 'laptop' },
      });
      return { id: user.id, token: token as string };
    };
    const ivy = await person('ivy@personal.example', 'Ivy@Corp.Example');
    const jim = await person('jim@corp.example');
    const kim = await person('kim@corp.example', 'kim@other.example');
    file('dgrant', {
      owner: 'zoe@corp.example',
      parents: ['folderD'],
      content: 'the dugong roadmap for everyone at corp',
      permissions: [
        { type: 'user', emailAddress: 'zoe@corp.example', role: 'owner' },
        { type: 'domain', domain: 'corp.example', role: 'reader' },
      ],
    });
    file('danyone', {
      owner: 'zoe@corp.example',
      parents: ['folderD'],
      content: 'the dugong press kit',
      permissions: [
        { type: 'user', emailAddress: 'zoe@corp.example', role: 'owner' },
        { type: 'anyone', role: 'reader' },
      ],
    });
    const { pairId } = await pair({ folder_ids: ['folderD'] }, undefined, 'sync');
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    const seen = async (token: string) => {
      const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query: 'dugong', limit: 50 });
      return [...new Set(chunks.map((c) => c.document_id))]
        .filter((id) => id === docId('dgrant') || id === docId('danyone'))
        .sort();
    };
    // Ivy's Google identity is at corp.example; Jim's kas email alone is no Google identity; Kim's is elsewhere.
    expect(await seen(ivy.token)).toEqual([docId('danyone'), docId('dgrant')].sort());
    expect(await seen(jim.token)).toEqual([docId('danyone')]);
    expect(await seen(kim.token)).toEqual([docId('danyone')]);
    const basicKey = await t.createKey('basic');
    expect(await seen(basicKey.key)).toEqual([docId('danyone')]);
    // Linking Jim's Google account grants the domain at once; unlinking Ivy's removes it.
    await identityService.linkExternalIdentity({
      ctx: t.deps,
      identity: { user_id: jim.id, source: 'google_drive', external_id: 'jim@corp.example' },
    });
    await identityService.unlinkExternalIdentity({
      ctx: t.deps,
      identity: { user_id: ivy.id, source: 'google_drive', external_id: 'Ivy@Corp.Example' },
    });
    expect(await seen(jim.token)).toEqual([docId('danyone'), docId('dgrant')].sort());
    expect(await seen(ivy.token)).toEqual([docId('danyone')]);
  });
  it('a link-only domain share (allowFileDiscovery: false) grants nothing; a discoverable one grants the domain', async () => {
    const ivy = await person('ivy2@personal.example', {
      source: 'google_drive',
      external_id: 'ivy2@corp.example',
    });
    file('llink', {
      owner: 'zoe@corp.example',
      parents: ['folderL'],
      content: 'the linkonly okapi memo',
      permissions: [
        { type: 'user', emailAddress: 'zoe@corp.example', role: 'owner' },
        { type: 'domain', domain: 'corp.example', role: 'reader', allowFileDiscovery: false },
      ],
    });
    file('lfind', {
      owner: 'zoe@corp.example',
      parents: ['folderL'],
      content: 'the findable okapi memo',
      permissions: [
        { type: 'user', emailAddress: 'zoe@corp.example', role: 'owner' },
        { type: 'domain', domain: 'corp.example', role: 'reader', allowFileDiscovery: true },
      ],
    });
    const { connectorId, pairId } = await pair({ folder_ids: ['folderL'] }, undefined, 'sync');
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await sees(ivy, 'linkonly okapi memo', docId('llink'))).toBe(false);
    expect(await sees(ivy, 'findable okapi memo', docId('lfind'))).toBe(true);
    // Made discoverable at the source: the permission pass of the next run grants the domain.
    const link = google.files.get('llink');
    if (!link) throw new Error('missing');
    link.permissions = link.permissions.map((p) =>
      p.type === 'domain' ? { ...p, allowFileDiscovery: true } : p,
    );
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await sees(ivy, 'linkonly okapi memo', docId('llink'))).toBe(true);
  });

  it('one file Drive refuses (export over 10 MB, cannotDownloadFile) is a per-document error; the others are indexed', async () => {
    google.exportLimitBytes = 64;
    try {
      file('pbig', {
        parents: ['folderP'],
        name: 'Huge doc',
        mimeType: 'application/vnd.google-apps.document',
        content: `the enormous ${'x'.repeat(100)} doc`,
      });
      file('pflagged', { parents: ['folderP'], name: 'flagged.txt', refused: 'cannotDownloadFile' });
      file('pgood', { parents: ['folderP'], content: 'the perfectly fine quokka file' });
      const { connectorId, pairId } = await pair({ folder_ids: ['folderP'] });
      await settle(pairId);
      expect(await lastAttempt(pairId)).toMatchObject({ status: 'completed_with_errors' });
      expect(await docIds(pairId)).toEqual([docId('pgood')]);
      const errors = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 5 });
      const messages = errors.items.map((e) => e.failure_message).join(' | ');
      expect(messages).toContain('exportSizeLimitExceeded');
      expect(messages).toContain('cannotDownloadFile');
      expect(errors.items.map((e) => e.document_id).sort()).toEqual([docId('pbig'), docId('pflagged')]);

      // The next run retries the two failed files only: the first run's files are not read again.
      const flagged = google.files.get('pflagged');
      if (!flagged) throw new Error('missing');
      delete flagged.refused;
      flagged.content = 'the flagged file, cleared';
      google.requests.length = 0;
      await admin().connectors.runOnce({ connector_id: connectorId });
      await settle(pairId);
      expect(await lastAttempt(pairId)).toMatchObject({ status: 'completed_with_errors' });
      expect(await docIds(pairId)).toEqual([docId('pflagged'), docId('pgood')].sort());
      expect(google.requests.filter((r) => r.includes('/files/pgood'))).toEqual([]);
      expect(google.requests).toContain('GET /drive/v3/files/pflagged');
      expect(google.requests.filter((r) => r.includes('/files/pbig')).length).toBeGreaterThan(0);
      const again = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 5 });
      expect(again.items[0]).toMatchObject({ document_id: docId('pbig') });
    } finally {
      google.exportLimitBytes = 10 * 1024 * 1024;
    }
  });

  it('403 userRateLimitExceeded is a rate limit, not a credential problem', async () => {
    file('q1', { parents: ['folderQ'] });
    google.rateLimit = { remaining: 100, retryAfter: 1, quota403: true };
    const { pairId } = await pair({ folder_ids: ['folderQ'] });
    const { until, reason } = await waiting(pairId);
    expect(reason).toContain('is over its request quota (403 userRateLimitExceeded)');
    expect(reason).not.toContain('refused the credential');
    expect(google.rateLimit.remaining).toBe(99);
    // Resumed no earlier than a minute later (Drive counts its quotas per minute).
    expect(until - Date.now()).toBeGreaterThan(50_000);
    google.rateLimit = { remaining: 0, retryAfter: 1 };
    await admin().connectors.setPairStatus({ cc_pair_id: pairId, status: 'paused' });
  });

  it('a shortcut is followed to its target, indexed once under the target id', async () => {
    file('starget', { parents: ['elsewhere'], content: 'the shortcut target wombat' });
    file('sshort', {
      parents: ['folderS'],
      name: 'Shortcut to target',
      mimeType: 'application/vnd.google-apps.shortcut',
      content: '',
      shortcutTarget: 'starget',
    });
    const { pairId } = await pair({ folder_ids: ['folderS'] });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(pairId)).toEqual([docId('starget')]);
    expect(await textOf(docId('starget'))).toContain('shortcut target wombat');
  });
  it('incompleteSearch over allDrives: the folder is listed again in its own shared drive, nothing missed', async () => {
    google.incompleteSearch = true;
    try {
      const folder = 'application/vnd.google-apps.folder';
      file('ifolder', {
        name: 'Team folder',
        mimeType: folder,
        parents: ['drive7'],
        driveId: 'drive7',
        content: '',
      });
      file('isub', { name: 'Sub', mimeType: folder, parents: ['ifolder'], driveId: 'drive7', content: '' });
      file('ione', { parents: ['ifolder'], driveId: 'drive7', content: 'the first ibis note' });
      file('itwo', { parents: ['isub'], driveId: 'drive7', content: 'the second ibis note' });
      const { pairId } = await pair({ folder_ids: ['ifolder'] });
      await settle(pairId);
      expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
      expect(await docIds(pairId)).toEqual([docId('ione'), docId('itwo')]);
    } finally {
      google.incompleteSearch = false;
    }
  });
});
