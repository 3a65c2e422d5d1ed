import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type FakeGitHub,
  type FakeGitHubCall,
  type FakeIssue,
  fakeRepo,
  startFakeGitHub,
} from '../../../../../test/fakes/github.ts';
import { useTestRuntime } from '../../testing/runtime-fixture.ts';
import { connectorTestHelpers } from '../connectors.test-helpers.ts';

const t = useTestRuntime({
  KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
  KAS_OUTBOUND_RETRIES: '2',
  KAS_CONNECTOR_HEARTBEAT_MS: '100',
  KAS_CONNECTOR_BACKOFF_MS: '0',
});
const { admin, pass, events } = t;
const { docIds, textOf, latestAttempt, person, sees, settle, sourcePair } = connectorTestHelpers(t);
let gh: FakeGitHub;

beforeAll(async () => {
  gh = await startFakeGitHub('acme');
});
afterAll(async () => {
  await gh.close();
});

const day = (d: number) => new Date(Date.UTC(2026, 0, d)).toISOString();

function issue(number: number, title: string, body: string, extra: Partial<FakeIssue> = {}): FakeIssue {
  return {
    number,
    title,
    body,
    user: 'octocat',
    state: 'open',
    updated_at: day(number),
    comments: [],
    ...extra,
  };
}

beforeEach(() => {
  gh.token = 'ghp_good';
  gh.pageSize = 2;
  gh.ownerType = 'org';
  gh.rateLimit = { remaining: 0, retryAfter: 1 };
  gh.secondary = { remaining: 0, retryAfter: null, status: 403 };
  gh.tokenUser = 'octocat';
  gh.requests.length = 0;
  gh.repos = [
    fakeRepo('widgets', {
      issues: [
        issue(1, 'Crash on start', 'the platypus module crashes', {
          comments: [1, 2, 3].map((id) => ({
            id,
            user: `dev${id}`,
            body: `comment number ${id} mentions echidna`,
          })),
        }),
        issue(2, 'Add dark mode', 'please add a dark mode', { is_pull: true, merged: true }),
        issue(3, 'Docs typo', 'a typo in the readme', { state: 'closed' }),
        issue(4, 'Faster builds', 'cache the dependencies', { is_pull: true }),
        issue(5, 'Old bug', 'an old bug about wallabies'),
      ],
      files: new Map([
        ['README.md', '# Widgets\nWidgets are made of numbat fur.'],
        ['src/index.ts', 'export {}'],
      ]),
    }),
    fakeRepo('secret-sauce', { private: true, issues: [issue(1, 'Recipe', 'the kookaburra recipe')] }),
  ];
});

async function githubPair(
  config: Record<string, unknown>,
  credential: Record<string, unknown> = {},
  inputType = 'poll',
  accessType: 'public' | 'sync' = 'public',
) {
  return sourcePair({
    name: 'gh',
    source: 'github',
    inputType: inputType as 'poll',
    accessType,
    config: { base_url: gh.url, repo_owner: 'acme', ...config },
    credential: { github_access_token: 'ghp_good', ...credential },
  });
}

const web = (path: string) => `${gh.url}/web/acme/${path}`;
/** Keeps a pair that ended rate limited from running again in later tests' passes. */
const pause = (pairId: number) => admin().connectors.setPairStatus({ cc_pair_id: pairId, status: 'paused' });
/**
 * A rate-limited attempt waits in the queue with its checkpoint: until when (epoch ms) and why, as the
 * pair's status shows them; passes are run until it waits (earlier tests' pairs share the workers).
 */
const waiting = async (pairId: number) => {
  for (let i = 0; i < 6; i++) {
    const { progress } = await admin().connectors.getPair({ cc_pair_id: pairId });
    if (progress?.waiting_until)
      return { until: new Date(progress.waiting_until).getTime(), reason: progress.waiting_reason ?? '' };
    await pass();
  }
  return { until: 0, reason: '' };
};
const retryAt = async (pairId: number) => (await waiting(pairId)).until;
const pairConnector = async (pairId: number) =>
  (await admin().connectors.getPair({ cc_pair_id: pairId })).connector.id;

describe('github source', () => {
  it('indexes pull requests, issues with every comment page and Markdown files of an org, following Link pages', async () => {
    const { pairId } = await githubPair({ include_markdown: true });
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(pairId)).toEqual(
      [
        web('widgets/issues/1'),
        web('widgets/pull/2'),
        web('widgets/issues/3'),
        web('widgets/pull/4'),
        web('widgets/issues/5'),
        web('widgets/blob/main/README.md'),
        web('secret-sauce/issues/1'),
      ].sort(),
    );
    // Three comments on pages of two: both pages read.
    const crash = await textOf(web('widgets/issues/1'));
    expect(crash).toContain('platypus module crashes');
    expect(crash).toContain('dev3: comment number 3 mentions echidna');
    expect(await textOf(web('widgets/blob/main/README.md'))).toContain('numbat fur');
    expect(gh.requests.filter((p) => p.startsWith('/repos/acme/widgets/issues?')).length).toBe(3);
    expect(gh.requests.filter((p) => p.startsWith('/repos/acme/widgets/issues/1/comments')).length).toBe(2);
    const hits = await admin().search.adminSearch({ query: 'echidna', filters: {} });
    expect(hits.documents[0]).toMatchObject({
      document_id: web('widgets/issues/1'),
      semantic_identifier: 'acme/widgets#1: Crash on start',
    });
    const doc = await sql<{
      source: string;
    }>`SELECT source FROM documents WHERE id = ${web('widgets/pull/2')}`.execute(t.deps.db);
    expect(doc.rows[0]?.source).toBe('github');
  });

  it("indexes a pull request with its comments, reviews' bodies and review comments, every page of each", async () => {
    const pr = gh.repos[0]?.issues[1] as FakeIssue;
    pr.comments = [{ id: 11, user: 'dev1', body: 'the conversation mentions a cassowary' }];
    pr.reviews = [
      { id: 21, user: 'lead', body: 'looks good, the gecko theme works', state: 'APPROVED' },
      { id: 22, user: 'dev2', body: '', state: 'COMMENTED' },
      { id: 23, user: 'dev3', body: 'please rename the axolotl flag', state: 'CHANGES_REQUESTED' },
    ];
    pr.review_comments = [1, 2, 3].map((n) => ({
      id: 30 + n,
      user: `rev${n}`,
      body: `diff note ${n} about the pangolin`,
      path: `src/theme${n}.ts`,
    }));
    const { pairId } = await githubPair({ repositories: 'widgets', include_issues: false });
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    const text = await textOf(web('widgets/pull/2'));
    expect(text).toContain('please add a dark mode');
    expect(text).toContain('dev1: the conversation mentions a cassowary');
    expect(text).toContain('lead approved: looks good, the gecko theme works');
    expect(text).toContain('dev3 requested changes: please rename the axolotl flag');
    expect(text).not.toContain('dev2 commented');
    for (const n of [1, 2, 3])
      expect(text).toContain(`rev${n} on src/theme${n}.ts: diff note ${n} about the pangolin`);
    // Pages of two: the three review comments and the three reviews take two pages each.
    expect(gh.requests.filter((p) => p.startsWith('/repos/acme/widgets/pulls/2/comments')).length).toBe(2);
    expect(gh.requests.filter((p) => p.startsWith('/repos/acme/widgets/pulls/2/reviews')).length).toBe(2);
    const hits = await admin().search.adminSearch({ query: 'axolotl flag', filters: {} });
    expect(hits.documents[0]).toMatchObject({ document_id: web('widgets/pull/2') });

    // A new review comment bumps the pull request's updated_at: the next poll re-reads it.
    pr.review_comments.push({ id: 40, user: 'rev4', body: 'late note on the tapir', path: 'README.md' });
    pr.updated_at = new Date().toISOString();
    await admin().connectors.runOnce({
      connector_id: (await pairConnector(pairId)) as number,
      from_beginning: false,
    });
    await pass();
    expect(await textOf(web('widgets/pull/2'))).toContain('rev4 on README.md: late note on the tapir');
  });

  it('reads a list of repositories of a user through a GitHub Enterprise base URL, PRs only', async () => {
    gh.ownerType = 'user';
    const { pairId } = await githubPair({
      base_url: `${gh.url}/api/v3`,
      repositories: 'widgets',
      include_issues: false,
    });
    await pass();
    expect(await docIds(pairId)).toEqual([web('widgets/pull/2'), web('widgets/pull/4')]);
  });

  it('re-indexes updated items on the next poll and drops deleted ones on a full sync', async () => {
    const { connectorId, pairId } = await githubPair({ repositories: ['widgets'] });
    await pass();
    expect(await docIds(pairId)).toHaveLength(5);
    const widgets = gh.repos[0];
    const first = widgets?.issues[0] as FakeIssue;
    first.body = 'the crash is caused by a quokka';
    first.updated_at = new Date().toISOString();
    gh.requests.length = 0;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect(await textOf(web('widgets/issues/1'))).toContain('caused by a quokka');
    // The poll asked only for what changed since the last run (the old issues' pages were not read).
    const listing = gh.requests.filter((p) => p.startsWith('/repos/acme/widgets/issues?'));
    expect(listing).toHaveLength(1);
    expect(listing[0]).toContain('since=');

    (widgets?.issues[4] as FakeIssue).deleted = true;
    await admin().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
    await pass();
    expect(await docIds(pairId)).not.toContain(web('widgets/issues/5'));
    expect(await docIds(pairId)).toHaveLength(4);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', docs_removed_from_index: 1 });
  });

  it('fails with a clear reason on a bad token (401); a 429 with Retry-After ends the attempt rate limited until then, with no request meanwhile', async () => {
    gh.token = 'ghp_other';
    const { pairId } = await githubPair({ repositories: 'widgets' });
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('GitHub refused the credential (401)'),
    });
    await pause(pairId);

    gh.token = 'ghp_good';
    gh.rateLimit = { remaining: 1, retryAfter: 1 };
    const other = await githubPair({ repositories: 'widgets', include_issues: false });
    gh.requests.length = 0;
    expect((await waiting(other.pairId)).reason).toContain(
      'GitHub is rate limiting requests (429: a secondary rate limit, retry-after)',
    );
    expect(await latestAttempt(other.pairId)).toMatchObject({ status: 'not_started' });
    // The client sent nothing more once refused (the outbound client's own retries are off for GitHub).
    expect(gh.requests).toHaveLength(1);
    expect((await retryAt(other.pairId)) - Date.now()).toBeGreaterThan(500);
    await pass();
    expect(gh.requests).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await pass();
    expect(await latestAttempt(other.pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(other.pairId)).toHaveLength(2);
  }, 20_000);

  it('primary limit: a 403 with x-ratelimit-remaining 0 is a rate limit until x-ratelimit-reset, never a permission error', async () => {
    const resetAt = Date.now() + 1500;
    gh.quota = { limit: 50, windowMs: 1500, status: 403, used: 50, resetAt };
    try {
      const { pairId } = await githubPair({ repositories: 'widgets', include_issues: false });
      const { reason } = await waiting(pairId);
      expect(reason).toContain('GitHub is rate limiting requests (403: the rate limit is exhausted');
      expect(reason).not.toContain('permission');
      expect(gh.requests).toHaveLength(1);
      // Resumes no earlier than x-ratelimit-reset (whole seconds) and sends nothing before.
      expect(await retryAt(pairId)).toBeGreaterThanOrEqual(Math.ceil(resetAt / 1000) * 1000);
      await pass();
      expect(gh.requests).toHaveLength(1);
      const wait = (await retryAt(pairId)) - Date.now() + 50;
      await new Promise((resolve) => setTimeout(resolve, wait));
      await pass();
      expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    } finally {
      gh.quota = { limit: 5000, windowMs: 3_600_000, status: 403, used: 0, resetAt: 0 };
    }
  }, 20_000);

  it('secondary limit: a 403 naming it without retry-after waits at least a minute, and is no permission error', async () => {
    gh.secondary = { remaining: 1, retryAfter: null, status: 403 };
    const { pairId } = await githubPair({ repositories: 'widgets' });
    const { reason } = await waiting(pairId);
    expect(reason).toContain('GitHub is rate limiting requests (403: a secondary rate limit)');
    expect(reason).not.toContain('permission');
    expect((await retryAt(pairId)) - Date.now()).toBeGreaterThan(55_000);
    expect(gh.requests).toHaveLength(1);
    await pause(pairId);
  });

  it('a run spends at most request_budget_share of the window, then stops until the window resets', async () => {
    gh.quota = { limit: 10, windowMs: 2000, status: 403, used: 0, resetAt: 0 };
    try {
      const { pairId } = await githubPair({ repositories: 'widgets', request_budget_share: 0.5 });
      expect((await waiting(pairId)).reason).toContain(
        "request budget is spent (5 of the token's 10 requests per window",
      );
      // Five requests sent, none refused by GitHub.
      expect(gh.requests).toHaveLength(5);
      expect(gh.quota.used).toBe(5);
      await pause(pairId);
      // Others spent 4 of a fresh window: after one request the token is at the share, the run stops.
      gh.quota = { limit: 10, windowMs: 60_000, status: 403, used: 4, resetAt: Date.now() + 60_000 };
      gh.requests.length = 0;
      const other = await githubPair({ repositories: 'widgets', request_budget_share: 0.5 });
      expect((await waiting(other.pairId)).reason).toContain('request budget is spent');
      expect(gh.requests).toHaveLength(1);
      await pause(other.pairId);
    } finally {
      gh.quota = { limit: 5000, windowMs: 3_600_000, status: 403, used: 0, resetAt: 0 };
    }
  });

  it('an empty repository (409 on its tree) has no files and does not stop the run', async () => {
    gh.repos.push(fakeRepo('blank', { empty: true }));
    const { pairId } = await githubPair({
      repositories: ['blank', 'widgets'],
      include_markdown: true,
      include_prs: false,
      include_issues: false,
    });
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(pairId)).toEqual([web('widgets/blob/main/README.md')]);
  });

  it('a truncated tree is walked subtree by subtree; the tree is read once per run, not per batch of files', async () => {
    const files = new Map<string, string>();
    for (let i = 0; i < 60; i++) files.set(`docs/part${i % 3}/page${i}.md`, `page ${i} of the manual`);
    files.set('README.md', 'the deep readme');
    gh.repos.push(fakeRepo('manual', { files }));
    gh.treeLimit = 10;
    try {
      const { pairId } = await githubPair({
        repositories: 'manual',
        include_markdown: true,
        include_prs: false,
        include_issues: false,
      });
      await pass();
      expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 61 });
      expect(await docIds(pairId)).toContain(web('manual/blob/main/docs/part2/page59.md'));
      const trees = gh.requests.filter((r) => r.includes('/git/trees/'));
      // Each of the root, docs/ and the three parts: recursive (truncated), then one level.
      expect(trees).toHaveLength(10);
    } finally {
      gh.treeLimit = 100_000;
    }
  });

  it("a user owner's private repositories are listed through /user/repos when the token is that user's", async () => {
    gh.ownerType = 'user';
    gh.tokenUser = 'acme';
    const own = await githubPair({ include_prs: false });
    await pass();
    expect(await docIds(own.pairId)).toContain(web('secret-sauce/issues/1'));
    expect(gh.requests).toContain('/user/repos?affiliation=owner&per_page=100');
    // Another user's owner: its public repositories only ("List repositories for a user").
    gh.tokenUser = 'octocat';
    const other = await githubPair({ include_prs: false });
    await pass();
    expect(await docIds(other.pairId)).not.toContain(web('secret-sauce/issues/1'));
    expect(await docIds(other.pairId)).toContain(web('widgets/issues/1'));
    gh.tokenUser = 'octocat';
  });

  it('names every bad or missing key of the config and the credential (400)', async () => {
    await expect(
      admin().connectors.create({
        name: 'bad gh',
        source: 'github',
        input_type: 'poll',
        connector_specific_config: { base_url: 'ftp://x', include_prs: 'yes' },
        access_type: 'public',
      }),
    ).rejects.toMatchObject({
      message: expect.stringMatching(/base_url.*|repo_owner/),
    });
    const error = await admin()
      .connectors.create({
        name: 'bad gh',
        source: 'github',
        input_type: 'poll',
        connector_specific_config: { base_url: 'ftp://x', include_prs: 'yes' },
        access_type: 'public',
      })
      .catch((e: Error) => e);
    expect(String((error as Error).message)).toContain('repo_owner');
    expect(String((error as Error).message)).toContain('include_prs');
    expect(String((error as Error).message)).toContain('base_url');
    await expect(
      admin().connectors.createCredential({ source: 'github', credential_json: { token: 'x' } }),
    ).rejects.toMatchObject({ message: expect.stringContaining('github_access_token') });
  });

  it('accepts signed webhooks and re-indexes just the affected issue; refuses bad signatures', async () => {
    const secret = 'hook-secret';
    const { connectorId, pairId } = await githubPair(
      { repositories: 'widgets' },
      { github_webhook_secret: secret },
      'event',
    );
    await pass();
    expect(await docIds(pairId)).toHaveLength(5);
    const third = gh.repos[0]?.issues[2] as FakeIssue;
    third.body = 'the typo was about a bilby';
    const body = JSON.stringify({
      action: 'edited',
      issue: { number: 3 },
      repository: { full_name: 'acme/widgets' },
    });
    const sign = (s: string, signed = body) =>
      `sha256=${createHmac('sha256', s).update(signed).digest('hex')}`;
    const anonymous = t.caller();
    await expect(
      anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: { 'x-github-event': 'issues', 'x-hub-signature-256': sign('wrong') },
        raw_body: body,
      }),
    ).rejects.toMatchObject({ message: expect.stringContaining('signature') });
    gh.requests.length = 0;
    const answer = await anonymous.connectorSources.event({
      connector_id: connectorId,
      headers: { 'x-github-event': 'issues', 'x-hub-signature-256': sign(secret) },
      raw_body: body,
    });
    expect(answer).toEqual({ success: true, queued: 1 });
    expect(await textOf(web('widgets/issues/3'))).not.toContain('about a bilby');
    expect(await events()).toBe(1);
    expect(await textOf(web('widgets/issues/3'))).toContain('about a bilby');
    expect(gh.requests.filter((p) => p.startsWith('/repos/acme/widgets/issues?'))).toEqual([]);

    third.deleted = true;
    // Another event (its body differs): the same body again would be a replay, acknowledged but not queued.
    const deleted = body.replace('"edited"', '"deleted"');
    const gone = await anonymous.connectorSources.event({
      connector_id: connectorId,
      headers: { 'x-github-event': 'issues', 'x-hub-signature-256': sign(secret, deleted) },
      raw_body: deleted,
    });
    expect(gone).toEqual({ success: true, queued: 1 });
    expect(await events()).toBe(1);
    expect(await docIds(pairId)).not.toContain(web('widgets/issues/3'));

    // A review comment on a pull request (pull_request_review_comment) re-indexes that pull request.
    const pull = gh.repos[0]?.issues[3] as FakeIssue;
    pull.review_comments = [{ id: 77, user: 'rev', body: 'cache the quoll artefacts too', path: 'ci.yml' }];
    const review = JSON.stringify({
      action: 'created',
      comment: { id: 77, body: 'cache the quoll artefacts too' },
      pull_request: { number: 4 },
      repository: { full_name: 'acme/widgets' },
    });
    const reviewAnswer = await anonymous.connectorSources.event({
      connector_id: connectorId,
      headers: {
        'x-github-event': 'pull_request_review_comment',
        'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(review).digest('hex')}`,
      },
      raw_body: review,
    });
    expect(reviewAnswer).toEqual({ success: true, queued: 1 });
    expect(await events()).toBe(1);
    expect(await textOf(web('widgets/pull/4'))).toContain('rev on ci.yml: cache the quoll artefacts too');
  });
  it("sync access: a private repository's issues are seen by its collaborators (linked GitHub logins) only; public ones by all", async () => {
    // Repositories of their own: the other tests' public pairs own secret-sauce's issues.
    const secret = fakeRepo('vault', {
      private: true,
      issues: [issue(1, 'Recipe', 'the kookaburra recipe is locked away')],
      collaborators: ['Dev1', 'dev2', 'dev3'],
    });
    gh.repos.push(secret);
    gh.repos.push(
      fakeRepo('open-book', { issues: [issue(9, 'Public roadmap', 'the open roadmap mentions capybaras')] }),
    );
    const collaborator = await person('dev1@corp.test', { source: 'github', external_id: 'dev1' });
    const outsider = await person('outsider@corp.test', { source: 'github', external_id: 'someone-else' });
    const { connectorId, pairId } = await githubPair({ repositories: 'vault,open-book' }, {}, 'poll', 'sync');
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    const recipe = web('vault/issues/1');
    expect(await sees(collaborator, 'kookaburra recipe', recipe)).toBe(true);
    expect(await sees(outsider, 'kookaburra recipe', recipe)).toBe(false);
    expect(await sees(outsider, 'capybaras roadmap', web('open-book/issues/9'))).toBe(true);
    // Collaborators were read (pages of two) once per repository and run.
    expect(gh.requests.filter((p) => p.startsWith('/repos/acme/vault/collaborators')).length).toBe(2);

    secret.collaborators = ['dev2'];
    await admin().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
    await pass();
    expect(await sees(collaborator, 'kookaburra recipe', recipe)).toBe(false);
  });

  it('sync access is refreshed by every poll, though no item changed: collaborators, and a repository made private', async () => {
    const den = fakeRepo('den', {
      private: true,
      issues: [issue(1, 'Plans', 'the hidden meerkat plans')],
      collaborators: ['ann-gh'],
    });
    const square = fakeRepo('square', { issues: [issue(2, 'Notice', 'the public meerkat notice')] });
    gh.repos.push(den, square);
    const ann = await person('ann.gh@corp.test', { source: 'github', external_id: 'ann-gh' });
    const ben = await person('ben.gh@corp.test', { source: 'github', external_id: 'ben-gh' });
    const { connectorId, pairId } = await githubPair({ repositories: 'den,square' }, {}, 'poll', 'sync');
    await settle(pairId);
    const plans = web('den/issues/1');
    const notice = web('square/issues/2');
    expect(await sees(ann, 'hidden meerkat plans', plans)).toBe(true);
    expect(await sees(ben, 'hidden meerkat plans', plans)).toBe(false);
    expect(await sees(ben, 'public meerkat notice', notice)).toBe(true);
    // Ann is removed, Ben added; the public repository is made private (Ann its only collaborator).
    den.collaborators = ['ben-gh'];
    square.private = true;
    square.collaborators = ['ann-gh'];
    gh.requests.length = 0;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await sees(ann, 'hidden meerkat plans', plans)).toBe(false);
    expect(await sees(ben, 'hidden meerkat plans', plans)).toBe(true);
    expect(await sees(ben, 'public meerkat notice', notice)).toBe(false);
    expect(await sees(ann, 'public meerkat notice', notice)).toBe(true);
    // Per repository, not per item, once per run: each private repository's collaborators.
    expect(gh.requests.filter((r) => r.includes('/collaborators'))).toHaveLength(2);
  });
  it('sync access: an internal repository is seen by the organisation members and its collaborators; a member who leaves loses it on the next poll', async () => {
    const hall = fakeRepo('hall', {
      visibility: 'internal',
      issues: [issue(1, 'Offsite', 'the internal wombat offsite')],
      collaborators: ['cara-gh'],
    });
    gh.repos.push(hall);
    gh.members = ['dan-gh', 'eve-gh'];
    try {
      const cara = await person('cara.gh@corp.test', { source: 'github', external_id: 'cara-gh' });
      const dan = await person('dan.gh@corp.test', { source: 'github', external_id: 'dan-gh' });
      const eve = await person('eve.gh@corp.test', { source: 'github', external_id: 'eve-gh' });
      const fay = await person('fay.gh@corp.test', { source: 'github', external_id: 'fay-gh' });
      const { connectorId, pairId } = await githubPair({ repositories: 'hall' }, {}, 'poll', 'sync');
      await settle(pairId);
      const offsite = web('hall/issues/1');
      const finds = (token: string) => sees(token, 'internal wombat offsite', offsite);
      expect(await finds(cara)).toBe(true);
      expect(await finds(dan)).toBe(true);
      expect(await finds(eve)).toBe(true);
      expect(await finds(fay)).toBe(false);
      // Eve leaves the organisation: the next poll reads no item, yet she no longer finds it.
      gh.members = ['dan-gh'];
      await admin().connectors.runOnce({ connector_id: connectorId });
      await settle(pairId);
      expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
      expect(await finds(eve)).toBe(false);
      expect(await finds(dan)).toBe(true);
    } finally {
      gh.members = [];
    }
  });

  it('a prune run (prune_freq) lists the ids the repositories still have and removes the deleted items', async () => {
    const tidy = fakeRepo('tidy', {
      issues: [
        issue(1, 'Keep me', 'stays'),
        issue(2, 'Drop me', 'goes away'),
        issue(3, 'Keep PR', 'merged', { is_pull: true }),
      ],
      files: new Map([
        ['docs/a.md', 'alpha doc'],
        ['docs/b.md', 'beta doc'],
      ]),
    });
    gh.repos.push(tidy);
    const { connectorId, pairId } = await githubPair({ repositories: 'tidy', include_markdown: true });
    await admin().connectors.update({ connector_id: connectorId, prune_freq: 300 });
    await pass();
    expect(await docIds(pairId)).toHaveLength(5);
    (tidy.issues[1] as FakeIssue).deleted = true;
    tidy.files.delete('docs/b.md');
    await sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toEqual(
      [web('tidy/issues/1'), web('tidy/pull/3'), web('tidy/blob/main/docs/a.md')].sort(),
    );
    // A failed listing removes nothing.
    (tidy.issues[0] as FakeIssue).deleted = true;
    gh.token = 'ghp_revoked';
    await sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toHaveLength(3);
  });

  it('a repository with issues disabled (410) is pruned by its pull requests, and the prune does not fail', async () => {
    const quiet = fakeRepo('quiet', {
      issues: [
        issue(1, 'Only PR', 'a pull request', { is_pull: true }),
        issue(2, 'Gone PR', 'x', { is_pull: true }),
      ],
    });
    gh.repos.push(quiet);
    const { connectorId, pairId } = await githubPair({ repositories: 'quiet' });
    await admin().connectors.update({ connector_id: connectorId, prune_freq: 300 });
    quiet.has_issues = false;
    await pass();
    expect(await docIds(pairId)).toEqual([web('quiet/pull/1'), web('quiet/pull/2')]);
    (quiet.issues[1] as FakeIssue).deleted = true;
    await sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toEqual([web('quiet/pull/1')]);
  });
  it('sync: a private repository whose collaborators the token may not list (403) gives per-document errors; the others are indexed', async () => {
    gh.repos.push(
      fakeRepo('locked', {
        private: true,
        collaboratorsForbidden: true,
        issues: [issue(1, 'Locked', 'the locked marmot issue'), issue(2, 'PR', 'x', { is_pull: true })],
      }),
    );
    const { pairId } = await githubPair({ repositories: ['locked', 'widgets'] }, {}, 'poll', 'sync');
    await settle(pairId);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'completed_with_errors' });
    expect(await docIds(pairId)).toHaveLength(5);
    expect((await docIds(pairId)).some((id) => id.includes('/locked/'))).toBe(false);
    const errors = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 10 });
    expect(errors.items.map((e) => e.document_id).sort()).toEqual([
      web('locked/issues/1'),
      web('locked/pull/2'),
    ]);
    expect(errors.items[0]?.failure_message).toContain('collaborators of acme/locked (403)');
    // Asked once for the run, not once per item.
    expect(gh.requests.filter((r) => r.startsWith('/repos/acme/locked/collaborators'))).toHaveLength(1);
  });
  it('an organisation needing three windows of quota completes in three windows, one resumed attempt, nothing fetched twice', async () => {
    const prs = Array.from({ length: 30 }, (_, i) =>
      issue(i + 1, `Change ${i + 1}`, `the windowed wallaby change ${i + 1}`, { is_pull: true }),
    );
    gh.repos.push(fakeRepo('big', { issues: prs }));
    gh.pageSize = 100;
    // 1 repository + 1 listing page + 3 requests per pull request = 92 requests, 40 per window.
    gh.quota = { limit: 40, windowMs: 1500, status: 403, used: 0, resetAt: 0, refused: 0 };
    try {
      const { pairId } = await githubPair({
        repositories: 'big',
        include_issues: false,
        request_budget_share: 1,
      });
      const started = Date.now();
      for (let i = 0; i < 40; i++) {
        await pass();
        const status = (await latestAttempt(pairId))?.status;
        if (status === 'success' || status === 'completed_with_errors') break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
      expect(await docIds(pairId)).toHaveLength(30);
      const attempts = await admin().connectors.indexAttempts({
        cc_pair_id: pairId,
        page_num: 0,
        page_size: 10,
      });
      expect(attempts.items).toHaveLength(1);
      // Two waits for the window to reset: more than two windows, less than four.
      expect(Date.now() - started).toBeGreaterThan(2 * 1500 - 500);
      expect(Date.now() - started).toBeLessThan(4 * 1500 + 3000);
      // Nothing fetched twice but the listing page each resumed attempt reads again; nothing refused.
      expect(new Set(gh.requests).size).toBe(92);
      const again = gh.requests.filter((r, i) => gh.requests.indexOf(r) !== i);
      expect(again.every((r) => r.startsWith('/repos/acme/big/pulls?'))).toBe(true);
      expect(again.length).toBeLessThanOrEqual(2);
      expect(gh.quota.refused).toBe(0);
    } finally {
      gh.quota = { limit: 5000, windowMs: 3_600_000, status: 403, used: 0, resetAt: 0, refused: 0 };
    }
  }, 30_000);

  // Last in the file: it checks the requests of every test above.
  it("conformance: every request the source sent is an operation of GitHub's OpenAPI description, with declared parameters", () => {
    expect(gh.calls.length).toBeGreaterThan(0);
    const problems = conformanceProblems(gh.calls);
    expect(problems).toEqual([]);
    // The check itself finds what the description rejects.
    expect(
      conformanceProblems([
        { method: 'GET', path: '/repos/acme/api/pulls', query: [['since', '2026-01-01T00:00:00Z']] },
        { method: 'GET', path: '/repos/acme/api/issues', query: [['state', 'everything']] },
        { method: 'DELETE', path: '/orgs/acme/repos', query: [] },
        { method: 'GET', path: '/repos/acme/api/pull/1', query: [] },
        { method: 'GET', path: '/orgs/acme/repos', query: [['per_page', '500']] },
      ]),
    ).toEqual([
      'GET /repos/{owner}/{repo}/pulls: undeclared query parameter since',
      'GET /repos/{owner}/{repo}/issues: state=everything not one of open, closed, all',
      'DELETE /orgs/{org}/repos: no such method',
      'GET /repos/acme/api/pull/1: no such path',
      'GET /orgs/{org}/repos: per_page=500 above 100',
    ]);
  });
});

interface OpenApiParameter {
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  schema?: { type?: string; enum?: unknown[]; minimum?: number; maximum?: number; format?: string };
}
type Operation = { parameters?: (OpenApiParameter | { $ref: string })[] };
interface Description {
  paths: Record<string, Record<string, Operation> & { parameters?: Operation['parameters'] }>;
  components: { parameters: Record<string, OpenApiParameter> };
}

/**
 * What GitHub's official OpenAPI description (npm `@octokit/openapi`, api.github.com) rejects in these
 * requests: a path no operation has (matched against the templated paths, literal segments first), a
 * method the path does not have, a query parameter the operation does not declare, a value outside the
 * parameter's schema (enum, integer, boolean, date-time), a missing required query parameter.
 */
function conformanceProblems(calls: FakeGitHubCall[]): string[] {
  const file = createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json');
  const description = JSON.parse(readFileSync(file, 'utf8')) as Description;
  const resolve = (p: OpenApiParameter | { $ref: string }): OpenApiParameter =>
    '$ref' in p
      ? (description.components.parameters[
          p.$ref.replace('#/components/parameters/', '')
        ] as OpenApiParameter)
      : p;
  const templates = Object.keys(description.paths).map((template) => {
    const segments = template.split('/');
    return {
      template,
      segments,
      literals: segments.filter((x) => !x.startsWith('{')).length,
    };
  });
  const valueProblem = (param: OpenApiParameter, value: string): string | null => {
    const schema = param.schema ?? {};
    if (schema.enum && !schema.enum.includes(value)) return `not one of ${schema.enum.join(', ')}`;
    if (schema.type === 'integer') {
      if (!/^-?\d+$/.test(value)) return 'not an integer';
      const n = Number(value);
      if (schema.minimum !== undefined && n < schema.minimum) return `below ${schema.minimum}`;
      if (schema.maximum !== undefined && n > schema.maximum) return `above ${schema.maximum}`;
      // The descriptions say "(max 100)" in words only.
      if (param.name === 'per_page' && n > 100) return 'above 100';
    }
    if (schema.type === 'boolean' && value !== 'true' && value !== 'false') return 'not a boolean';
    if (schema.format === 'date-time' && Number.isNaN(Date.parse(value))) return 'not a date-time';
    return null;
  };
  const problems = new Set<string>();
  for (const call of calls) {
    const method = call.method.toLowerCase();
    const segments = call.path.split('/').map(decodeURIComponent);
    const found = templates
      .filter(
        (t) =>
          t.segments.length === segments.length &&
          t.segments.every((x, i) => x.startsWith('{') || x === segments[i]),
      )
      .sort((a, b) => b.literals - a.literals)[0];
    if (!found) {
      problems.add(`${call.method} ${call.path}: no such path`);
      continue;
    }
    const item = description.paths[found.template] as Description['paths'][string];
    const operation = item[method];
    if (!operation) {
      problems.add(`${call.method} ${found.template}: no such method`);
      continue;
    }
    const params = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(resolve);
    found.segments.forEach((x, i) => {
      const param = params.find((p) => p.in === 'path' && `{${p.name}}` === x);
      const bad = param && valueProblem(param, segments[i] as string);
      if (bad) problems.add(`${call.method} ${found.template}: path ${x} "${segments[i]}" ${bad}`);
    });
    const query = new Map(call.query);
    for (const [name, value] of call.query) {
      const param = params.find((p) => p.in === 'query' && p.name === name);
      if (!param) problems.add(`${call.method} ${found.template}: undeclared query parameter ${name}`);
      const bad = param && valueProblem(param, value);
      if (bad) problems.add(`${call.method} ${found.template}: ${name}=${value} ${bad}`);
    }
    for (const p of params)
      if (p.in === 'query' && p.required && !query.has(p.name))
        problems.add(`${call.method} ${found.template}: missing required ${p.name}`);
  }
  return [...problems];
}
