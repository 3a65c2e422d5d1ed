import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeGitHub, type FakeIssue, fakeRepo, startFakeGitHub } from '../../../../test/fakes/github.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as eventsRepository from './events.repository.ts';
import { createIndexingState } from './indexing-state.ts';
import { eventPass } from './scheduler.ts';

// Webhook events are stored when accepted and processed by the worker: exactly once, surviving a
// dead worker, retried with backoff on a source failure, visible on the pair.
const t = useTestRuntime({
  KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
  KAS_OUTBOUND_RETRIES: '0',
  KAS_CONNECTOR_HEARTBEAT_MS: '100',
  KAS_CONNECTOR_STALE_MS: '500',
  KAS_CONNECTOR_BACKOFF_MS: '1000',
  KAS_CONNECTOR_EVENT_TRIES: '3',
});
const { admin, pass, events } = t;
let gh: FakeGitHub;
let counter = 0;
const secret = 'hook-secret';

beforeAll(async () => {
  gh = await startFakeGitHub('acme');
});
afterAll(async () => {
  await gh.close();
});
const web = (path: string) => `${gh.url}/web/acme/${path}`;

const issue = (number: number, body: string): FakeIssue => ({
  number,
  title: `Issue ${number}`,
  body,
  user: 'octocat',
  state: 'open',
  updated_at: '2026-01-02T00:00:00Z',
  comments: [],
});

beforeEach(() => {
  gh.token = 'ghp_good';
  gh.delayMs = 0;
  gh.rateLimit = { remaining: 0, retryAfter: 1 };
  gh.requests.length = 0;
  gh.repos = [fakeRepo('gadgets', { issues: [issue(1, 'the first issue mentions a quokka')] })];
});

async function eventPair() {
  counter++;
  const { id: connectorId } = await admin().connectors.create({
    name: `events ${counter}`,
    source: 'github',
    input_type: 'event',
    connector_specific_config: { base_url: gh.url, repo_owner: 'acme', repositories: 'gadgets' },
    access_type: 'public',
  });
  const cred = await admin().connectors.createCredential({
    source: 'github',
    credential_json: { github_access_token: 'ghp_good', github_webhook_secret: secret },
  });
  const pairId = (
    await admin().connectors.createPair({
      connector_id: connectorId,
      credential_id: cred.id,
      name: `events pair ${counter}`,
      access_type: 'public',
    })
  ).data as number;
  await pass();
  return { connectorId, pairId };
}

let sent = 0;

/**
 * A signed delivery of an edit to issue `number`: each a distinct event (its body differs, as GitHub's
 * do), except that the same `delivery` id is the same event redelivered (the same body).
 */
function deliver(
  connectorId: number,
  number: number,
  delivery?: string,
  from?: { clientAddress: string; secret?: string },
) {
  const body = JSON.stringify({
    action: 'edited',
    issue: { number, updated_at: delivery ?? `edit ${++sent}` },
    repository: { full_name: 'acme/gadgets' },
  });
  return send(connectorId, body, delivery, from);
}

/** Posts `body` signed with the pair's secret (or `from.secret`), under the unsigned `delivery` header. */
function send(
  connectorId: number,
  body: string,
  delivery?: string,
  from?: { clientAddress: string; secret?: string },
) {
  return t.caller(undefined, from && { clientAddress: from.clientAddress }).connectorSources.event({
    connector_id: connectorId,
    headers: {
      'x-github-event': 'issues',
      'x-hub-signature-256': `sha256=${createHmac('sha256', from?.secret ?? secret)
        .update(body)
        .digest('hex')}`,
      ...(delivery ? { 'x-github-delivery': delivery } : {}),
    },
    raw_body: body,
  });
}

async function textOf(id: string): Promise<string> {
  const rows = await sql<{ content: string }>`SELECT content FROM chunks WHERE document_id = ${id}`.execute(
    t.deps.db,
  );
  return rows.rows.map((r) => r.content).join('\n');
}

async function eventRows(pairId: number) {
  const rows = await sql<{ status: string; tries: number; next_try_at: Date; error_msg: string | null }>`
    SELECT status, tries, next_try_at, error_msg FROM connector_events WHERE cc_pair_id = ${pairId} ORDER BY id`.execute(
    t.deps.db,
  );
  return rows.rows;
}

/** The pair's `events` in `GET /api/manage/admin/connector/indexing-status`. */
async function statusEvents(pairId: number) {
  return (await admin().connectors.indexingStatus({})).find((s) => s.cc_pair_id === pairId)?.events;
}

const issueReads = () => gh.requests.filter((p) => p.startsWith('/repos/acme/gadgets/issues/1')).length;

describe('queued connector events', () => {
  it('stores the event and answers without reading the source; the worker then indexes it once', async () => {
    const { connectorId, pairId } = await eventPair();
    (gh.repos[0]?.issues[0] as FakeIssue).body = 'the first issue now mentions a numbat';
    gh.requests.length = 0;
    expect(await deliver(connectorId, 1)).toEqual({ success: true, queued: 1 });
    expect(gh.requests).toEqual([]);
    expect(await eventRows(pairId)).toMatchObject([{ status: 'queued', tries: 0 }]);
    expect((await admin().connectors.getPair({ cc_pair_id: pairId })).events).toMatchObject({
      pending: 1,
      failed: 0,
      last_processed: null,
    });
    expect(await statusEvents(pairId)).toEqual({
      pending: 1,
      failed: 0,
      last_error: null,
      last_processed: null,
    });

    expect(await events()).toBe(1);
    expect(await textOf(web('gadgets/issues/1'))).toContain('numbat');
    expect(await eventRows(pairId)).toMatchObject([{ status: 'done', tries: 1 }]);
    expect(await events()).toBe(0);
    expect(issueReads()).toBe(1);
    const details = await admin().connectors.getPair({ cc_pair_id: pairId });
    expect(details.events).toMatchObject({ pending: 0, failed: 0, last_error: null });
    expect(details.events.last_processed).toEqual(expect.any(String));
    expect(await statusEvents(pairId)).toEqual(details.events);
  });

  it('two workers draining the queue at once process each event exactly once', async () => {
    const { connectorId, pairId } = await eventPair();
    gh.repos[0]?.issues.push(issue(2, 'second'), issue(3, 'third'), issue(4, 'fourth'));
    for (const n of [1, 2, 3, 4]) await deliver(connectorId, n);
    gh.requests.length = 0;
    const other = { ...t.deps, indexing: createIndexingState('another-worker') };
    const [a, b] = await Promise.all([events(), eventPass(other, new AbortController().signal)]);
    expect(a + b).toBe(4);
    const issueGets = gh.requests.filter((p) => /^\/repos\/acme\/gadgets\/issues\/\d+$/.test(p));
    expect(issueGets.sort()).toEqual([1, 2, 3, 4].map((n) => `/repos/acme/gadgets/issues/${n}`));
    expect((await eventRows(pairId)).map((r) => r.status)).toEqual(['done', 'done', 'done', 'done']);
  });

  it('an event claimed by a worker that died is processed by another after the heartbeat goes stale', async () => {
    const { connectorId, pairId } = await eventPair();
    (gh.repos[0]?.issues[0] as FakeIssue).body = 'the first issue is about a bilby';
    await deliver(connectorId, 1);
    // A worker claims it and dies before processing it (no heartbeat, no finish).
    expect(await eventsRepository.claimEvent(t.deps.db, 'dead-worker')).toMatchObject({ cc_pair_id: pairId });
    gh.requests.length = 0;
    expect(await events()).toBe(0);
    expect(issueReads()).toBe(0);
    await sql`UPDATE connector_events SET heartbeat_at = now() - interval '1 minute' WHERE cc_pair_id = ${pairId}`.execute(
      t.deps.db,
    );
    expect(await events()).toBe(1);
    expect(await textOf(web('gadgets/issues/1'))).toContain('bilby');
    // The dead worker cannot finish it a second time.
    expect(
      await eventsRepository.finishEvent(t.deps.db, (await lastEventId(pairId)) as number, 'dead-worker', {
        indexed: 1,
        removed: 0,
      }),
    ).toBe(false);
    expect(await eventRows(pairId)).toMatchObject([{ status: 'done', tries: 2 }]);
  });

  it('a rate-limited source is retried after its Retry-After, then with backoff; the error shows on the pair; after the last try the event fails', async () => {
    const { connectorId, pairId } = await eventPair();
    (gh.repos[0]?.issues[0] as FakeIssue).body = 'the first issue is about a dingo';
    await deliver(connectorId, 1);
    gh.rateLimit = { remaining: 1, retryAfter: 120 };
    const before = Date.now();
    expect(await events()).toBe(0);
    const [limited] = await eventRows(pairId);
    expect(limited).toMatchObject({ status: 'queued', tries: 1 });
    expect(limited?.error_msg).toContain('rate limiting');
    expect(new Date(limited?.next_try_at as Date).getTime()).toBeGreaterThanOrEqual(before + 119_000);
    expect((await admin().connectors.getPair({ cc_pair_id: pairId })).events).toMatchObject({
      pending: 1,
      last_error: expect.stringContaining('rate limiting'),
    });
    // Not due yet: nothing is read.
    gh.requests.length = 0;
    expect(await events()).toBe(0);
    expect(gh.requests).toEqual([]);

    // Due again; the source now fails with a bad token: backoff (1 s, then 2 s), then failed for good.
    gh.token = 'rotated';
    await sql`UPDATE connector_events SET next_try_at = now() WHERE cc_pair_id = ${pairId}`.execute(
      t.deps.db,
    );
    const second = Date.now();
    await events();
    const [backedOff] = await eventRows(pairId);
    expect(backedOff).toMatchObject({ status: 'queued', tries: 2 });
    const delay = new Date(backedOff?.next_try_at as Date).getTime() - second;
    expect(delay).toBeGreaterThanOrEqual(1500);
    expect(delay).toBeLessThan(10_000);
    await sql`UPDATE connector_events SET next_try_at = now() WHERE cc_pair_id = ${pairId}`.execute(
      t.deps.db,
    );
    await events();
    expect(await eventRows(pairId)).toMatchObject([{ status: 'failed', tries: 3 }]);
    const details = await admin().connectors.getPair({ cc_pair_id: pairId });
    expect(details.events).toMatchObject({ pending: 0, failed: 1 });
    expect(details.events.last_error).toContain('refused the credential');
    // The indexing status lists the same counts for every pair, each its own.
    expect(await statusEvents(pairId)).toEqual(details.events);
    const { pairId: quiet } = await eventPair();
    expect(await statusEvents(quiet)).toEqual({
      pending: 0,
      failed: 0,
      last_error: null,
      last_processed: null,
    });
    expect(await textOf(web('gadgets/issues/1'))).not.toContain('dingo');
  });

  it('events of a paused pair wait; resuming processes them', async () => {
    const { connectorId, pairId } = await eventPair();
    (gh.repos[0]?.issues[0] as FakeIssue).body = 'the first issue is about a wombat';
    await admin().connectors.setPairStatus({ cc_pair_id: pairId, status: 'paused' });
    expect(await deliver(connectorId, 1)).toEqual({ success: true, queued: 1 });
    expect(await events()).toBe(0);
    expect(await eventRows(pairId)).toMatchObject([{ status: 'queued', tries: 0 }]);
    await admin().connectors.setPairStatus({ cc_pair_id: pairId, status: 'active' });
    expect(await events()).toBe(1);
    expect(await textOf(web('gadgets/issues/1'))).toContain('wombat');
  });

  it('a redelivery (same X-GitHub-Delivery) is acknowledged but stored and processed once', async () => {
    const { connectorId, pairId } = await eventPair();
    const id = `delivery-${pairId}`;
    expect(await deliver(connectorId, 1, id)).toEqual({ success: true, queued: 1 });
    expect(await deliver(connectorId, 1, id)).toEqual({ success: true, queued: 0 });
    expect(await events()).toBe(1);
    // Even after it was processed; another delivery of the same issue is a new event.
    expect(await deliver(connectorId, 1, id)).toEqual({ success: true, queued: 0 });
    expect(await deliver(connectorId, 1, `${id}-b`)).toEqual({ success: true, queued: 1 });
    expect(await events()).toBe(1);
    expect(await eventRows(pairId)).toHaveLength(2);
  });

  it('a signed body replayed under new X-GitHub-Delivery ids (the header is unsigned) is acknowledged, queued once', async () => {
    const { connectorId, pairId } = await eventPair();
    const body = JSON.stringify({
      action: 'edited',
      issue: { number: 1 },
      repository: { full_name: 'acme/gadgets' },
    });
    expect(await send(connectorId, body, 'first')).toEqual({ success: true, queued: 1 });
    for (const replay of ['replay-1', 'replay-2', undefined])
      expect(await send(connectorId, body, replay)).toEqual({ success: true, queued: 0 });
    expect(await events()).toBe(1);
    // Still after it was processed, from the database (what another process would read too).
    expect(await send(connectorId, body, 'replay-3')).toEqual({ success: true, queued: 0 });
    expect(await eventRows(pairId)).toHaveLength(1);
  });

  it('tells a caller without the secret nothing about the connector: every refusal is the absent one', async () => {
    const { connectorId } = await eventPair();
    const { id: pollId } = await admin().connectors.create({
      name: `poll ${counter}`,
      source: 'github',
      input_type: 'poll',
      connector_specific_config: { base_url: gh.url, repo_owner: 'acme', repositories: 'gadgets' },
      access_type: 'public',
    });
    const unsigned = (id: number) =>
      errorOf(
        t.caller().connectorSources.event({
          connector_id: id,
          headers: { 'x-github-event': 'issues', 'x-hub-signature-256': 'sha256=00' },
          raw_body: '{}',
        }),
      );
    const absent = await unsigned(999_999);
    expect(absent).toMatchObject({ status: 404, error_code: 'CONNECTOR_NOT_FOUND' });
    for (const id of [connectorId, pollId]) {
      const answer = await unsigned(id);
      expect(answer).toEqual({ ...absent, detail: absent.detail.replace('999999', `${id}`) });
      expect(answer.detail).not.toMatch(/github|poll|input_type/i);
    }
  });

  it('deleting the pair deletes its queued events', async () => {
    const { connectorId, pairId } = await eventPair();
    await deliver(connectorId, 1);
    const { credential } = await admin().connectors.getPair({ cc_pair_id: pairId });
    await admin().connectors.deletionAttempt({ connector_id: connectorId, credential_id: credential.id });
    await pass();
    expect(await eventRows(pairId)).toEqual([]);
  });
});

describe('webhook throttling', () => {
  it('refused deliveries (a guessed secret, an absent connector) count against their address under their own limit: past it refusals are 429, signed deliveries and API keys from that address still pass', async () => {
    const { connectorId } = await eventPair();
    const attacker = { clientAddress: '203.0.113.7', secret: 'guessed-secret' };
    const limit = t.config.KAS_WEBHOOK_FAILURES_PER_MINUTE;
    for (let i = 0; i < limit; i++)
      expect(await errorOf(deliver(i % 2 ? connectorId : 999_999, 1, undefined, attacker))).toMatchObject({
        status: 404,
        error_code: 'CONNECTOR_NOT_FOUND',
      });
    expect(await errorOf(deliver(connectorId, 1, undefined, attacker))).toMatchObject({
      status: 429,
      error_code: 'RATE_LIMITED',
    });
    // GitHub's shared address is not locked out by forged deliveries: a signed one is queued.
    expect(await deliver(connectorId, 1, undefined, { clientAddress: attacker.clientAddress })).toEqual({
      success: true,
      queued: 1,
    });
    // Nor are API keys from that address: webhook refusals are not failed authentications.
    expect(await errorOf(t.caller('svck-not-a-key', attacker).apiKeys.me({}))).toMatchObject({ status: 401 });
    expect(await deliver(connectorId, 1, undefined, { clientAddress: '203.0.113.8' })).toEqual({
      success: true,
      queued: 1,
    });
  });
});

async function lastEventId(pairId: number): Promise<number | undefined> {
  const rows = await sql<{ id: string }>`
    SELECT id FROM connector_events WHERE cc_pair_id = ${pairId} ORDER BY id DESC LIMIT 1`.execute(t.deps.db);
  return rows.rows[0] ? Number(rows.rows[0].id) : undefined;
}
