import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeConfluence, startFakeConfluence } from '../../../../../test/fakes/confluence.ts';
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
  latestAttempt: lastAttempt,
  settle,
  sourcePair,
  person,
  sees,
  waiting,
} = connectorTestHelpers(t);
let wiki: FakeConfluence;

beforeAll(async () => {
  wiki = await startFakeConfluence();
  wiki.basic.add('ann@corp.example:cloud-token');
  wiki.bearer.add('dc-pat');
});
afterAll(async () => {
  await wiki.close();
});
beforeEach(() => {
  wiki.pages.clear();
  wiki.spaces.clear();
  wiki.groups.clear();
  wiki.rateLimit.remaining = 0;
});

const pageId = (id: string) => `${wiki.url}/pages/viewpage.action?pageId=${id}`;

function page(
  id: string,
  title: string,
  text: string,
  over: Partial<Parameters<typeof wiki.pages.set>[1]> = {},
) {
  wiki.pages.set(id, {
    id,
    title,
    space: 'ENG',
    body: `<h1>${title}</h1><p>${text}</p><ac:structured-macro ac:name="info"><ac:rich-text-body><p>note ${id}</p></ac:rich-text-body></ac:structured-macro>`,
    ancestors: [],
    modified: new Date('2026-01-01T00:00:00Z'),
    author: { displayName: 'Ann', email: 'ann@corp.example', accountId: 'acc-ann' },
    attachments: [],
    ...over,
  });
}

function engSpace() {
  wiki.spaces.set('ENG', { users: [{ accountId: 'acc-ann' }], groups: ['eng-team'] });
  wiki.groups.set('eng-team', [{ accountId: 'acc-bob', email: 'bob@corp.example' }]);
  page('100', 'Onboarding', 'the capybara onboarding guide');
  page('101', 'Deploys', 'how we deploy the platypus service', { ancestors: ['100'] });
  page('102', 'Runbook', 'pager duty for the axolotl cluster', { ancestors: ['100', '101'] });
  page('103', 'Holidays', 'the office closes in august', {
    attachments: [
      {
        id: 'att1',
        title: 'policy.txt',
        mediaType: 'text/plain',
        content: Buffer.from('the okapi travel policy'),
      },
      { id: 'att2', title: 'logo.png', mediaType: 'image/png', content: Buffer.from([1, 2, 3]) },
    ],
  });
  page('200', 'Elsewhere', 'another space entirely', { space: 'OPS' });
}

async function pair(
  config: Record<string, unknown>,
  credential: Record<string, unknown> = {
    confluence_username: 'ann@corp.example',
    confluence_access_token: 'cloud-token',
  },
  access_type: 'public' | 'sync' = 'public',
  extra: { prune_freq?: number } = {},
) {
  return sourcePair({
    name: 'wiki',
    source: 'confluence',
    accessType: access_type,
    extra,
    config: { wiki_base: wiki.url, space: 'ENG', ...config },
    credential,
  });
}

describe('confluence source', () => {
  it('refuses a connector without wiki_base and space, naming both, and a credential without a token', async () => {
    const error = await errorOf(
      admin().connectors.create({
        name: 'bad wiki',
        source: 'confluence',
        input_type: 'poll',
        connector_specific_config: { page_id: 'abc' },
        access_type: 'public',
      }),
    );
    expect(error).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    expect(error.detail).toContain('connector_specific_config.wiki_base');
    expect(error.detail).toContain('connector_specific_config.space');
    expect(error.detail).toContain('connector_specific_config.page_id');
    const credential = await errorOf(
      admin().connectors.createCredential({
        source: 'confluence',
        credential_json: { confluence_username: 'x' },
      }),
    );
    expect(credential).toMatchObject({ status: 400 });
    expect(credential.detail).toContain('confluence_access_token');
  });

  it('indexes a space page by page (paginated), storage format as text, attachments; credential masked', async () => {
    engSpace();
    const { pairId, credentialId } = await pair({});
    await pass();
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 5 });
    const attachment = `${wiki.url}/download/attachments/103/policy.txt`;
    expect(await docIds(pairId)).toEqual(
      [pageId('100'), pageId('101'), pageId('102'), pageId('103'), attachment].sort(),
    );
    const hits = await admin().search.adminSearch({ query: 'platypus deploy', filters: {} });
    expect(hits.documents[0]).toMatchObject({ document_id: pageId('101'), semantic_identifier: 'Deploys' });
    const okapi = await admin().search.adminSearch({ query: 'okapi travel', filters: {} });
    expect(okapi.documents[0]?.document_id).toBe(attachment);
    const text = await sql<{ content: string }>`
      SELECT content FROM chunks WHERE document_id = ${pageId('100')}`.execute(t.deps.db);
    expect(text.rows.map((r) => r.content).join(' ')).toContain('note 100');
    // Basic auth with email + token; the search asked for this space only.
    expect(wiki.queries.at(-1)).toContain('space="ENG"');
    const details = await admin().connectors.getPair({ cc_pair_id: pairId });
    expect(details.credential.credential_json).toEqual({
      confluence_username: 'ann@corp.example',
      confluence_access_token: '********',
    });
    expect(credentialId).toBeGreaterThan(0);
  });

  it('with page_id indexes that page and its descendants only; Data Center personal access token (Bearer)', async () => {
    engSpace();
    const { pairId } = await pair(
      { page_id: '101', index_attachments: false },
      { confluence_access_token: 'dc-pat' },
    );
    await pass();
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(pairId)).toEqual([pageId('101'), pageId('102')]);
  });

  it('sync access on Data Center: space readers from its permissions API (users by userKey); a reader removed loses the page on the next poll', async () => {
    wiki.spaces.set('DCS', { users: [{ accountId: 'ann.dc' }], groups: ['dc-team'] });
    wiki.groups.set('dc-team', [{ accountId: 'bob.dc', email: 'bob.dc@corp.example' }]);
    page('700', 'Datacenter', 'the quokka failover plan', { space: 'DCS' });
    const ann = await person('ann.dc@corp.example', { source: 'confluence', external_id: 'ann.dc' });
    const bob = await person('bob.dc@corp.example');
    const carl = await person('carl.dc@corp.example');
    const { connectorId, pairId } = await pair(
      { space: 'DCS', index_attachments: false },
      { confluence_access_token: 'dc-pat' },
      'sync',
    );
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    const finds = (token: string) => sees(token, 'quokka failover', pageId('700'));
    expect(await finds(ann)).toBe(true);
    expect(await finds(bob)).toBe(true);
    expect(await finds(carl)).toBe(false);
    // Ann's space permission is removed at the source; the page is not edited.
    wiki.spaces.set('DCS', { users: [], groups: ['dc-team'] });
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await finds(ann)).toBe(false);
    expect(await finds(bob)).toBe(true);
  });

  it('fails with a clear reason on bad credentials and on a missing space', async () => {
    engSpace();
    const bad = await pair({}, { confluence_access_token: 'wrong' });
    await pass();
    expect(await lastAttempt(bad.pairId)).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('Confluence refused the credential (401)'),
    });
    const missing = await pair({ space: 'NOPE' });
    await pass();
    expect(await lastAttempt(missing.pairId)).toMatchObject({
      status: 'failed',
      error_msg: 'Confluence space "NOPE" not found',
    });
    // Failing pairs retry in every later pass: keep them out of the next tests' requests.
    for (const id of [bad.pairId, missing.pairId])
      await admin().connectors.setPairStatus({ cc_pair_id: id, status: 'paused' });
  });

  it('waits out 429 with Retry-After; past the retries the attempt waits until then and resumes', async () => {
    engSpace();
    wiki.rateLimit = { remaining: 1, retryAfter: 1 };
    const ok = await pair({ index_attachments: false });
    const started = Date.now();
    await pass();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(await lastAttempt(ok.pairId)).toMatchObject({ status: 'success' });
    wiki.rateLimit = { remaining: 100, retryAfter: 1 };
    const limited = await pair({ index_attachments: false });
    await pass();
    // Past the retries the attempt waits in the queue (checkpoint kept, worker free) and resumes then.
    expect(await lastAttempt(limited.pairId)).toMatchObject({ status: 'not_started' });
    const waiting = (await t.admin().connectors.getPair({ cc_pair_id: limited.pairId })).progress;
    expect(waiting?.waiting_reason).toContain('rate limiting');
    expect(new Date(waiting?.waiting_until ?? 0).getTime()).toBeGreaterThan(Date.now() - 1000);
    wiki.rateLimit.remaining = 0;
    await new Promise((r) => setTimeout(r, 1100));
    await pass();
    expect(await lastAttempt(limited.pairId)).toMatchObject({ status: 'success' });
  }, 30_000);

  it('a Retry-After longer than a minute is not slept through: the attempt waits until then', async () => {
    wiki.spaces.set('SLOW', {});
    page('900', 'Slow', 'the sloth page', { space: 'SLOW' });
    wiki.rateLimit = { remaining: 1, retryAfter: 120 };
    try {
      const { pairId } = await pair({ space: 'SLOW' });
      const started = Date.now();
      const { until, reason } = await waiting(pairId);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(reason).toContain('Confluence is rate limiting requests (429)');
      expect(until - Date.now()).toBeGreaterThan(100_000);
      await admin().connectors.setPairStatus({ cc_pair_id: pairId, status: 'paused' });
    } finally {
      wiki.rateLimit = { remaining: 0, retryAfter: 1 };
    }
  });

  it('polls only pages modified since the last run; a prune run removes deleted pages and attachments', async () => {
    // A space of its own: the other tests' pairs own ENG's pages.
    wiki.spaces.set('PRN', {});
    page('400', 'Induction', 'the quagga induction guide', { space: 'PRN' });
    page('401', 'Deploys', 'how we deploy the platypus service', { space: 'PRN' });
    page('402', 'Runbook', 'pager duty for the axolotl cluster', { space: 'PRN' });
    page('403', 'Holidays', 'the office closes in august', {
      space: 'PRN',
      attachments: [
        {
          id: 'att9',
          title: 'dates.md',
          mediaType: 'text/markdown',
          content: Buffer.from('the gnu holiday dates'),
        },
      ],
    });
    const { connectorId, pairId } = await pair({ space: 'PRN' }, undefined, 'public', { prune_freq: 300 });
    await pass();
    expect(await docIds(pairId)).toHaveLength(5);
    // The next poll asks for pages modified since the last run (minus an overlap).
    const edited = wiki.pages.get('402');
    if (edited)
      Object.assign(edited, { modified: new Date(), body: '<p>the axolotl moved to a new pager</p>' });
    wiki.pages.delete('400');
    const holidays = wiki.pages.get('403');
    if (holidays) holidays.attachments = [];
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect(wiki.queries.at(-1)).toMatch(/lastmodified >= "\d{4}-\d{2}-\d{2} \d{2}:\d{2}"/);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 1 });
    // A poll does not see deletions: the page is still there until the prune run.
    expect(await docIds(pairId)).toContain(pageId('400'));
    await sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toEqual([pageId('401'), pageId('402'), pageId('403')]);
    const gone = [pageId('400'), `${wiki.url}/download/attachments/403/dates.md`];
    for (const query of ['quagga induction', 'gnu holiday dates']) {
      const hits = await admin().search.adminSearch({ query, filters: {} });
      expect(hits.documents.map((d) => d.document_id).filter((id) => gone.includes(id))).toEqual([]);
    }
    const rows = await sql<{ id: string }>`SELECT id FROM documents WHERE id = ANY(${gone}::text[])`.execute(
      t.deps.db,
    );
    expect(rows.rows).toEqual([]);
    const details = await admin().connectors.getPair({ cc_pair_id: pairId });
    expect(details.last_pruned).not.toBeNull();
    // Not due again until prune_freq has passed.
    wiki.pages.delete('401');
    await pass();
    expect(await docIds(pairId)).toContain(pageId('401'));
  });

  it('sync access: a person sees a page exactly when the space lets them (account, group member, anonymous)', async () => {
    // A space of its own: the other tests' public pairs own ENG's pages.
    wiki.spaces.set('SEC', { users: [{ accountId: 'acc-ann' }], groups: ['eng-team'] });
    wiki.groups.set('eng-team', [{ accountId: 'acc-bob', email: 'bob@corp.example' }]);
    page('300', 'Secrets', 'pager duty for the axolotl cluster', { space: 'SEC' });
    const person = async (email: string) => {
      const user = await usersService.createPerson({ ctx: t.deps, email, role: 'basic' });
      const { token } = await identityService.createPersonalToken({
        ctx: t.deps,
        userId: user.id,
        input: { name: 'laptop' },
      });
      return { ...user, token: token as string };
    };
    const ann = await person('ann.sync@corp.example');
    await identityService.linkExternalIdentity({
      ctx: t.deps,
      identity: { user_id: ann.id, source: 'confluence', external_id: 'acc-ann' },
    });
    const bob = await person('bob@corp.example');
    const carl = await person('carl@corp.example');
    const { connectorId, pairId } = await pair({ space: 'SEC' }, undefined, 'sync');
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    const sees = async (token: string) => {
      const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query: 'axolotl pager' });
      return chunks.some((c) => c.document_id === pageId('300'));
    };
    expect(await sees(ann.token)).toBe(true);
    expect(await sees(bob.token)).toBe(true);
    expect(await sees(carl.token)).toBe(false);
    // A basic API key (not the pair's creator) sees nothing either: only the source's list counts.
    const basicKey = await t.createKey('basic');
    expect(await sees(basicKey.key)).toBe(false);

    // Bob leaves the group; the space opens to anonymous users: the next poll applies both, although
    // no page changed (space permissions reach every page of the pair without re-reading them).
    wiki.groups.set('eng-team', []);
    wiki.spaces.set('SEC', { users: [{ accountId: 'acc-ann' }], groups: ['eng-team'], anonymous: true });
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await sees(carl.token)).toBe(true);
    expect(await sees(bob.token)).toBe(true);
    // Anonymous access withdrawn: a poll (no page changed, none re-read) takes it away again.
    wiki.spaces.set('SEC', { users: [{ accountId: 'acc-ann' }], groups: ['eng-team'] });
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await sees(carl.token)).toBe(false);
    expect(await sees(bob.token)).toBe(false);
    expect(await sees(ann.token)).toBe(true);
  });

  it("sync access: a page's read restrictions (and its ancestors') narrow the space permission", async () => {
    wiki.spaces.set('RES', { users: [{ accountId: 'acc-ann' }], groups: ['res-team'] });
    wiki.groups.set('res-team', [
      { accountId: 'acc-bob', email: 'bob.r@corp.example' },
      { accountId: 'acc-carl', email: 'carl.r@corp.example' },
      { accountId: 'acc-dana', email: 'dana.r@corp.example' },
    ]);
    // Erin leads but cannot read the space: a restriction naming her gives her nothing.
    wiki.groups.set('leads', [
      { accountId: 'acc-carl', email: 'carl.r@corp.example' },
      { accountId: 'acc-erin', email: 'erin.r@corp.example' },
    ]);
    page('500', 'Open page', 'the open wildebeest notes', { space: 'RES' });
    page('501', 'Salaries', 'the restricted wildebeest salaries', {
      space: 'RES',
      restrictions: { users: [{ accountId: 'acc-bob' }], groups: ['leads'] },
      attachments: [
        {
          id: 'att9',
          title: 'bands.txt',
          mediaType: 'text/plain',
          content: Buffer.from('wildebeest pay bands'),
        },
      ],
    });
    page('502', 'Bonuses', 'the nested wildebeest bonuses', {
      space: 'RES',
      ancestors: ['501'],
      restrictions: { users: [{ accountId: 'acc-carl' }, { accountId: 'acc-dana' }] },
    });
    page('503', 'Raises', 'the inherited wildebeest raises', { space: 'RES', ancestors: ['501'] });
    const person = async (email: string, accountId?: string) => {
      const user = await usersService.createPerson({ ctx: t.deps, email, role: 'basic' });
      if (accountId)
        await identityService.linkExternalIdentity({
          ctx: t.deps,
          identity: { user_id: user.id, source: 'confluence', external_id: accountId },
        });
      const { token } = await identityService.createPersonalToken({
        ctx: t.deps,
        userId: user.id,
        input: { name: 'laptop' },
      });
      return token as string;
    };
    const people = {
      ann: await person('ann.r@corp.example', 'acc-ann'),
      bob: await person('bob.r@corp.example'),
      carl: await person('carl.r@corp.example'),
      dana: await person('dana.r@corp.example'),
      erin: await person('erin.r@corp.example'),
    };
    const { connectorId, pairId } = await pair({ space: 'RES' }, undefined, 'sync');
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    const attachment = `${wiki.url}/download/attachments/501/bands.txt`;
    const visible = async () => {
      const out: Record<string, string[]> = {};
      for (const [name, token] of Object.entries(people)) {
        const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
        const chunks = await searchService.searchChunks({
          ctx: t.deps,
          actor,
          query: 'wildebeest',
          limit: 50,
        });
        out[name] = [
          ...new Set(
            chunks.map((c) =>
              c.document_id === attachment ? 'att' : c.document_id.replace(/.*pageId=/, ''),
            ),
          ),
        ].sort();
      }
      return out;
    };
    expect(await visible()).toEqual({
      ann: ['500'],
      bob: ['500', '501', '503', 'att'],
      carl: ['500', '501', '502', '503', 'att'],
      dana: ['500'],
      erin: [],
    });

    // The restriction of 501 changes, no page is edited: the next poll re-syncs every page's access,
    // its attachment's with it, without listing any page's attachments.
    (wiki.pages.get('501') as { restrictions?: unknown }).restrictions = {
      users: [{ accountId: 'acc-ann' }],
    };
    const listings = wiki.hits.get('/wiki/rest/api/content/501/child/attachment') ?? 0;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(wiki.hits.get('/wiki/rest/api/content/501/child/attachment') ?? 0).toBe(listings);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await visible()).toEqual({
      ann: ['500', '501', '503', 'att'],
      bob: ['500'],
      carl: ['500'],
      dana: ['500'],
      erin: [],
    });
  });
  it("polls read CQL dates in the site's time zone: an edit on a site at UTC−5 is not missed", async () => {
    wiki.spaces.set('TZ', {});
    wiki.timeZoneOffsetMinutes = -300;
    try {
      page('700', 'Timetable', 'the old tapir timetable', { space: 'TZ' });
      const unknown = await pair({ space: 'TZ' });
      const known = await pair({ space: 'TZ', timezone: 'Etc/GMT+5' });
      await settle(unknown.pairId);
      await settle(known.pairId);
      const edited = wiki.pages.get('700');
      if (edited) Object.assign(edited, { modified: new Date(), body: '<p>the new tapir timetable</p>' });
      await admin().connectors.runOnce({ connector_id: unknown.connectorId });
      await admin().connectors.runOnce({ connector_id: known.connectorId });
      wiki.queries.length = 0;
      await settle(unknown.pairId);
      await settle(known.pairId);
      // Read as UTC, "lastmodified >= <last run − 5 min>" would mean five hours later on this site.
      expect(await lastAttempt(unknown.pairId)).toMatchObject({ status: 'success', total_docs_indexed: 1 });
      expect(await lastAttempt(known.pairId)).toMatchObject({ status: 'success', total_docs_indexed: 1 });
      // With the zone known, the CQL names the site's wall-clock time (UTC−5).
      const local = new Date(Date.now() - 5 * 3_600_000).toISOString().slice(0, 10);
      expect(wiki.queries.some((q) => q.includes(`lastmodified >= "${local} `))).toBe(true);
    } finally {
      wiki.timeZoneOffsetMinutes = 0;
    }
  });

  it('sync access: the ancestor-restrictions 404 (CONFCLOUD-77618) falls back to restrictions page by page', async () => {
    wiki.spaces.set('BUG', { groups: ['bug-team'] });
    wiki.groups.set('bug-team', [
      { accountId: 'acc-fay', email: 'fay.b@corp.example' },
      { accountId: 'acc-gil', email: 'gil.b@corp.example' },
    ]);
    page('600', 'Parent', 'the restricted gazelle parent', {
      space: 'BUG',
      restrictions: { users: [{ accountId: 'acc-fay' }] },
    });
    page('601', 'Child', 'the gazelle child under a restricted parent', {
      space: 'BUG',
      ancestors: ['600'],
      brokenAncestor: true,
    });
    // Its ancestor 699 is trashed: it restricts nothing.
    page('602', 'Orphan', 'the gazelle orphan of a trashed page', {
      space: 'BUG',
      ancestors: ['699'],
      brokenAncestor: true,
    });
    const fay = await person('fay.b@corp.example');
    const gil = await person('gil.b@corp.example');
    const { connectorId, pairId } = await pair({ space: 'BUG' }, undefined, 'sync');
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(pairId)).toEqual([pageId('600'), pageId('601'), pageId('602')]);
    expect(wiki.hits.get('/wiki/rest/api/content/600/restriction/byOperation/read')).toBeGreaterThan(0);
    expect(await sees(fay, 'gazelle child restricted parent', pageId('601'))).toBe(true);
    expect(await sees(gil, 'gazelle child restricted parent', pageId('601'))).toBe(false);
    expect(await sees(gil, 'gazelle orphan trashed', pageId('602'))).toBe(true);
    // The permission pass of a poll goes through the same fallback.
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await sees(gil, 'gazelle child restricted parent', pageId('601'))).toBe(false);
  });

  it('an attachment over attachment_max_bytes (by its listed fileSize) is a per-document error; the run goes on', async () => {
    wiki.spaces.set('ATT', {});
    page('800', 'Handbook', 'the zebu handbook', {
      space: 'ATT',
      attachments: [
        { id: 'att80', title: 'huge.txt', mediaType: 'text/plain', content: Buffer.from('x'.repeat(200)) },
        { id: 'att81', title: 'small.txt', mediaType: 'text/plain', content: Buffer.from('the zebu note') },
      ],
    });
    const { pairId } = await pair({ space: 'ATT', attachment_max_bytes: 100 });
    wiki.hits.clear();
    await settle(pairId);
    expect(await lastAttempt(pairId)).toMatchObject({ status: 'completed_with_errors' });
    expect(await docIds(pairId)).toEqual([`${wiki.url}/download/attachments/800/small.txt`, pageId('800')]);
    const errors = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 5 });
    expect(errors.items[0]?.failure_message).toContain('"huge.txt" is larger than 100 bytes');
    // Not downloaded at all.
    expect(wiki.hits.get('/wiki/download/attachments/800/huge.txt')).toBeUndefined();
  });
});
