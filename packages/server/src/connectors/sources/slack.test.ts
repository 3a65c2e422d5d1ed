import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeSlack, startFakeSlack } from '../../../../../test/fakes/slack.ts';
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
let slack: FakeSlack;

beforeAll(async () => {
  slack = await startFakeSlack();
});
afterAll(async () => {
  await slack.close();
});

const now = () => (Date.now() / 1000).toFixed(6);

beforeEach(() => {
  slack.token = 'xoxb-good';
  slack.pageSize = 2;
  slack.rateLimit = { remaining: 0, retryAfter: 1 };
  slack.requests.length = 0;
  slack.users = [
    { id: 'U1', name: 'alice', real_name: 'Alice Liddell', display_name: 'Alice', email: 'alice@acme.test' },
    { id: 'U2', name: 'bob', real_name: 'Bob Stone', display_name: '', email: 'bob@acme.test' },
    { id: 'U3', name: 'carol', real_name: 'Carol Danvers', display_name: 'Carol', email: 'carol@acme.test' },
  ];
  slack.channels = [
    {
      id: 'C1',
      name: 'general',
      is_private: false,
      is_member: true,
      members: ['U1', 'U2', 'U3'],
      messages: [
        { ts: '1767225600.000100', user: 'U1', text: '<@U2> where is the wombat report?' },
        { ts: '1767225700.000200', user: 'U2', text: 'it is in the drive', thread_ts: '1767225600.000100' },
        { ts: '1767225800.000300', user: 'U3', text: 'found it, thanks', thread_ts: '1767225600.000100' },
        { ts: '1767225900.000400', user: 'U2', text: 'lunch is at noon today' },
        { ts: '1767226000.000500', user: 'U3', text: 'joined', subtype: 'channel_join' },
        { ts: '1767226100.000600', user: 'U1', text: 'the quarterly numbats census starts monday' },
      ],
    },
    {
      id: 'C2',
      name: 'secret-plans',
      is_private: true,
      is_member: true,
      members: ['U1', 'U3'],
      messages: [{ ts: '1767225650.000700', user: 'U3', text: 'the surprise party is for bob' }],
    },
    { id: 'C3', name: 'lobby', is_private: false, is_member: false, members: [], messages: [] },
  ];
});

async function slackPair(
  config: Record<string, unknown>,
  credential: Record<string, unknown> = {},
  inputType = 'poll',
  accessType: 'public' | 'sync' = 'public',
) {
  return sourcePair({
    name: 'slack',
    source: 'slack',
    inputType: inputType as 'poll',
    accessType,
    config: { base_url: slack.url, ...config },
    credential: { slack_bot_token: 'xoxb-good', ...credential },
  });
}

describe('slack source', () => {
  it('indexes one document per thread of the named channels, user names resolved, every cursor page read', async () => {
    const { pairId } = await slackPair({ channels: ['general', 'secret-plans'] });
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 4 });
    expect(await docIds(pairId)).toEqual(
      [
        'C1__1767225600.000100',
        'C1__1767225900.000400',
        'C1__1767226100.000600',
        'C2__1767225650.000700',
      ].sort(),
    );
    const thread = await textOf('C1__1767225600.000100');
    expect(thread).toContain('Alice: @Bob Stone where is the wombat report?');
    expect(thread).toContain('Bob Stone: it is in the drive');
    expect(thread).toContain('Carol: found it, thanks');
    // Three history pages and two reply pages of two.
    expect(slack.requests.filter((r) => r.startsWith('conversations.history?channel=C1')).length).toBe(2);
    expect(slack.requests.filter((r) => r.startsWith('conversations.replies')).length).toBe(2);
    const hits = await admin().search.adminSearch({ query: 'wombat report', filters: {} });
    expect(hits.documents[0]).toMatchObject({
      document_id: 'C1__1767225600.000100',
      semantic_identifier: '#general: @Bob Stone where is the wombat report?',
    });
    const link = await sql<{ link: string | null }>`
      SELECT link FROM chunks WHERE document_id = 'C1__1767225900.000400' LIMIT 1`.execute(t.deps.db);
    expect(link.rows[0]?.link).toBe('https://acme.slack.com/archives/C1/p1767225900000400');
  });

  it('matches channels by regular expression; an unknown channel name fails the attempt clearly', async () => {
    const { pairId } = await slackPair({ channels: ['gen.*'], channel_regex_enabled: true });
    await pass();
    expect((await docIds(pairId)).every((id) => id.startsWith('C1__'))).toBe(true);
    const missing = await slackPair({ channels: ['general', 'nowhere'] });
    await pass();
    expect(await latestAttempt(missing.pairId)).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('nowhere'),
    });
  });

  it('records a channel the bot is not in as a clear per-document error and goes on', async () => {
    const { pairId } = await slackPair({});
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'completed_with_errors' });
    const errors = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 5 });
    expect(errors.items[0]?.failure_message).toContain('not a member of #lobby');
    expect(await docIds(pairId)).toHaveLength(4);
  });

  it('join_public_channels: the bot joins a public channel it is not in (conversations.join) and indexes it; without channels:join the reason is given', async () => {
    const lobby = slack.channels.find((c) => c.id === 'C3');
    if (!lobby) throw new Error('missing');
    lobby.messages = [{ ts: '1767225610.000800', user: 'U1', text: 'welcome to the echidna lobby' }];
    slack.scopes.delete('channels:join');
    try {
      const refused = await slackPair({ channels: ['lobby'], join_public_channels: true });
      await settle(refused.pairId);
      expect(await latestAttempt(refused.pairId)).toMatchObject({ status: 'completed_with_errors' });
      const errors = await admin().connectors.errors({
        cc_pair_id: refused.pairId,
        page_num: 0,
        page_size: 5,
      });
      expect(errors.items[0]?.failure_message).toContain('lacks the channels:join scope');
    } finally {
      slack.scopes.add('channels:join');
    }
    slack.requests.length = 0;
    const { pairId } = await slackPair({ join_public_channels: true });
    await settle(pairId);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(slack.requests.filter((r) => r.startsWith('POST conversations.join'))).toEqual([
      'POST conversations.join?channel=C3',
    ]);
    expect(lobby.is_member).toBe(true);
    expect(await docIds(pairId)).toContain('C3__1767225610.000800');
  });

  it('fails on a bad token with a clear reason and waits out 429 with Retry-After', async () => {
    slack.token = 'xoxb-other';
    const { pairId } = await slackPair({ channels: ['general'] });
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('Slack refused the bot token (invalid_auth)'),
    });
    slack.token = 'xoxb-good';
    slack.rateLimit = { remaining: 1, retryAfter: 1 };
    const other = await slackPair({ channels: ['secret-plans'] });
    const started = Date.now();
    await pass();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(await docIds(other.pairId)).toEqual(['C2__1767225650.000700']);
  }, 20_000);

  it('polls only new messages and drops deleted threads on a full sync', async () => {
    const { connectorId, pairId } = await slackPair({ channels: ['general'] });
    await pass();
    const general = slack.channels[0];
    general?.messages.push({ ts: now(), user: 'U2', text: 'a brand new echidna sighting' });
    slack.requests.length = 0;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await pass();
    expect(await docIds(pairId)).toHaveLength(4);
    const history = slack.requests.filter((r) => r.startsWith('conversations.history'));
    expect(history.every((r) => r.includes('oldest='))).toBe(true);
    expect(slack.requests.filter((r) => r.startsWith('conversations.replies'))).toEqual([]);

    if (general) general.messages = general.messages.filter((m) => m.ts !== '1767225900.000400');
    await admin().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
    await pass();
    expect(await docIds(pairId)).not.toContain('C1__1767225900.000400');
    expect(await latestAttempt(pairId)).toMatchObject({ docs_removed_from_index: 1 });
  });

  it('a poll picks up new replies to older threads (latest_reply newer than the last run) within thread_lookback_days', async () => {
    const ago = (days: number) => (Date.now() / 1000 - days * 86_400).toFixed(6);
    const [parent, quiet, ancient] = [ago(10), ago(8), ago(60)];
    slack.channels.push({
      id: 'C5',
      name: 'old-threads',
      is_private: false,
      is_member: true,
      members: ['U1', 'U2'],
      messages: [
        { ts: parent, user: 'U1', text: 'who owns the capybara budget?' },
        { ts: ago(9), user: 'U2', text: 'finance does', thread_ts: parent },
        { ts: quiet, user: 'U2', text: 'the kiwi offsite is cancelled' },
        { ts: ago(7), user: 'U1', text: 'sad news', thread_ts: quiet },
        { ts: ancient, user: 'U1', text: 'the ancient tortoise thread' },
      ],
    });
    const { connectorId, pairId } = await slackPair({
      channels: ['old-threads'],
      thread_lookback_every_hours: 0,
    });
    const narrow = await slackPair({ channels: ['old-threads'], thread_lookback_days: 0 });
    await pass();
    expect(await docIds(pairId)).toEqual([`C5__${ancient}`, `C5__${parent}`, `C5__${quiet}`].sort());

    const channel = slack.channels.find((c) => c.id === 'C5');
    channel?.messages.push(
      { ts: now(), user: 'U1', text: 'update: the capybara budget moved to operations', thread_ts: parent },
      { ts: now(), user: 'U2', text: 'a late tortoise reply', thread_ts: ancient },
    );
    slack.requests.length = 0;
    await admin().connectors.runOnce({ connector_id: connectorId });
    await admin().connectors.runOnce({ connector_id: narrow.connectorId });
    await pass();
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', new_docs_indexed: 0 });
    expect(await textOf(`C5__${parent}`)).toContain('the capybara budget moved to operations');
    // Only the thread with a new reply is re-read; one older than the lookback is not seen.
    const replies = slack.requests.filter((r) => r.startsWith('conversations.replies?channel=C5'));
    expect(replies.every((r) => r.includes(`ts=${parent}`))).toBe(true);
    expect(replies.length).toBeGreaterThan(0);
    const history = slack.requests.filter((r) => r.startsWith('conversations.history?channel=C5'));
    expect(history.every((r) => r.includes('oldest='))).toBe(true);
    // With no lookback the poll reads only messages posted since the last run: the reply is missed.
    const narrowAttempt = await latestAttempt(narrow.pairId);
    expect(narrowAttempt).toMatchObject({ status: 'success' });
    expect(narrowAttempt?.total_docs_indexed).toBe(0);
  });

  it('the lookback is read once per thread_lookback_every_hours: polls in between read the current period only', async () => {
    // The daily period starts at midnight UTC, and a poll reads from five minutes before the last
    // run's end (POLL_OVERLAP_MS): a poll whose range starts before midnight reads the lookback (CI,
    // started at 23:51, failed here). A test starting within its own time limit before midnight, or
    // within the overlap after it, waits until its polls are all past the overlap.
    const day = 86_400_000;
    const overlapPast = 5 * 60_000 + 5_000;
    const intoDay = Date.now() % day;
    const wait = intoDay > day - 150_000 ? day - intoDay + overlapPast : Math.max(0, overlapPast - intoDay);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const ago = (days: number) => (Date.now() / 1000 - days * 86_400).toFixed(6);
    const parent = ago(10);
    slack.channels.push({
      id: 'C6',
      name: 'periodic',
      is_private: false,
      is_member: true,
      members: ['U1'],
      messages: [
        { ts: parent, user: 'U1', text: 'who feeds the okapi?' },
        ...Array.from({ length: 9 }, (_, i) => ({ ts: ago(9 - i), user: 'U1', text: `okapi day ${i}` })),
      ],
    });
    // Daily (the default): a poll within the day does not re-read ten days of history.
    const daily = await slackPair({ channels: ['periodic'] });
    // Every second: each poll starts a new period, so it reads the lookback.
    const often = await slackPair({ channels: ['periodic'], thread_lookback_every_hours: 1 / 3600 });
    await pass();
    slack.channels
      .find((c) => c.id === 'C6')
      ?.messages.push({ ts: now(), user: 'U2', text: 'the zookeeper feeds the okapi', thread_ts: parent });
    slack.requests.length = 0;
    await admin().connectors.runOnce({ connector_id: daily.connectorId });
    await pass();
    const midnight = Math.floor(Date.now() / 86_400_000) * 86_400;
    const history = slack.requests.filter((r) => r.startsWith('conversations.history?channel=C6'));
    expect(history).toHaveLength(1);
    expect(Number(new URLSearchParams(history[0]?.split('?')[1]).get('oldest'))).toBe(midnight);
    expect(await textOf(`C6__${parent}`)).not.toContain('zookeeper');
    slack.requests.length = 0;
    await admin().connectors.runOnce({ connector_id: often.connectorId });
    await pass();
    // Ten days of history in pages of two, and the thread with the new reply re-read.
    expect(slack.requests.filter((r) => r.startsWith('conversations.history?channel=C6')).length).toBe(5);
    expect(await textOf(`C6__${parent}`)).toContain('zookeeper');
  }, 600_000);

  it('a message event reads its channel with conversations.info, not the whole channel list', async () => {
    const secret = 'signing-secret-2';
    const { connectorId } = await slackPair(
      { channels: ['general'] },
      { slack_signing_secret: secret },
      'event',
    );
    await pass();
    const reply = { ts: now(), user: 'U3', text: 'the tapir report is late', thread_ts: '1767225600.000100' };
    slack.channels[0]?.messages.push(reply);
    const body = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev0TAPIR',
      event: { type: 'message', channel: 'C1', ...reply },
    });
    const ts = Math.floor(Date.now() / 1000);
    slack.requests.length = 0;
    await t.caller().connectorSources.event({
      connector_id: connectorId,
      headers: {
        'x-slack-request-timestamp': String(ts),
        'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
      },
      raw_body: body,
    });
    expect(await events()).toBe(1);
    expect(await textOf('C1__1767225600.000100')).toContain('the tapir report is late');
    expect(slack.requests.filter((r) => r.startsWith('conversations.list'))).toEqual([]);
    expect(slack.requests.filter((r) => r.startsWith('conversations.info'))).toEqual([
      'conversations.info?channel=C1',
    ]);
  });

  it("within Slack's tiers: a 429 with Retry-After is waited out; the non-Marketplace limits (1 a minute, 15 per page) are met", async () => {
    slack.pageSize = 200;
    const messages = Array.from({ length: 40 }, (_, i) => ({
      ts: `17672${String(30000 + i).padStart(5, '0')}.000100`,
      user: 'U1',
      text: `tiered iguana message ${i}`,
    }));
    slack.channels.push({
      id: 'C7',
      name: 'tiered',
      is_private: false,
      is_member: true,
      members: ['U1'],
      messages,
    });
    // Windows of a second: the non-Marketplace limit allows one history call a second here.
    slack.tiers = { windowMs: 1000, scale: 1, nonMarketplace: true };
    try {
      const { pairId } = await slackPair({ channels: ['tiered'] });
      await pass();
      expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
      expect(await docIds(pairId)).toHaveLength(40);
      // 40 messages in pages of at most 15: three history pages, each after the previous window.
      const history = slack.requests.filter((r) => r.startsWith('conversations.history?channel=C7'));
      expect(history.length).toBeGreaterThanOrEqual(3);
    } finally {
      slack.tiers = null;
    }
  }, 20_000);

  it('rejects an invalid regular expression and a credential without a token (400 naming the keys)', async () => {
    await expect(
      admin().connectors.create({
        name: 'bad slack',
        source: 'slack',
        input_type: 'poll',
        connector_specific_config: { channels: ['(unclosed'], channel_regex_enabled: true },
        access_type: 'public',
      }),
    ).rejects.toMatchObject({ message: expect.stringContaining('channels.0') });
    await expect(
      admin().connectors.createCredential({ source: 'slack', credential_json: {} }),
    ).rejects.toMatchObject({ message: expect.stringContaining('slack_bot_token') });
  });

  it('answers url_verification, re-indexes the thread of a message event, removes deleted threads; refuses bad or stale signatures', async () => {
    const secret = 'signing-secret';
    const { connectorId, pairId } = await slackPair(
      { channels: ['general'] },
      { slack_signing_secret: secret },
      'event',
    );
    await pass();
    const sign = (body: string, ts = Math.floor(Date.now() / 1000)) => ({
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
    });
    const anonymous = t.caller();
    const challenge = JSON.stringify({ type: 'url_verification', challenge: 'chal-123', token: 'x' });
    expect(
      await anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: sign(challenge),
        raw_body: challenge,
      }),
    ).toMatchObject({ success: true, challenge: 'chal-123' });

    const reply = {
      ts: now(),
      user: 'U1',
      text: 'update: the platypus report is done',
      thread_ts: '1767225600.000100',
    };
    slack.channels[0]?.messages.push(reply);
    const event = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev0PLATYPUS',
      event: {
        type: 'message',
        channel: 'C1',
        ts: reply.ts,
        thread_ts: reply.thread_ts,
        text: reply.text,
        user: 'U1',
      },
    });
    await expect(
      anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: { ...sign(event), 'x-slack-signature': 'v0=deadbeef' },
        raw_body: event,
      }),
    ).rejects.toMatchObject({ message: expect.stringContaining('signature') });
    await expect(
      anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: sign(event, Math.floor(Date.now() / 1000) - 600),
        raw_body: event,
      }),
    ).rejects.toMatchObject({ message: expect.stringContaining('signature') });
    slack.requests.length = 0;
    expect(
      await anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: sign(event),
        raw_body: event,
      }),
    ).toEqual({ success: true, queued: 1 });
    expect(await events()).toBe(1);
    expect(await textOf('C1__1767225600.000100')).toContain('the platypus report is done');
    // Slack retries a delivery (same event_id, X-Slack-Retry-Num): acknowledged, not stored again.
    expect(
      await anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: { ...sign(event), 'x-slack-retry-num': '1' },
        raw_body: event,
      }),
    ).toEqual({ success: true, queued: 0 });
    expect(slack.requests.filter((r) => r.startsWith('conversations.history'))).toEqual([]);

    const channel = slack.channels[0];
    if (channel) channel.messages = channel.messages.filter((m) => m.ts !== '1767226100.000600');
    const deleted = JSON.stringify({
      type: 'event_callback',
      event: {
        type: 'message',
        subtype: 'message_deleted',
        channel: 'C1',
        ts: now(),
        deleted_ts: '1767226100.000600',
      },
    });
    expect(
      await anonymous.connectorSources.event({
        connector_id: connectorId,
        headers: sign(deleted),
        raw_body: deleted,
      }),
    ).toEqual({ success: true, queued: 1 });
    expect(await events()).toBe(1);
    expect(await docIds(pairId)).not.toContain('C1__1767226100.000600');
  });
  it("sync access: a private channel's threads are seen by its members (by email or linked Slack id) only", async () => {
    // A channel of its own: the other tests' public pairs own secret-plans' threads.
    slack.channels.push({
      id: 'C4',
      name: 'board-room',
      is_private: true,
      is_member: true,
      members: ['U1', 'U3'],
      messages: [{ ts: '1767225660.000800', user: 'U1', text: 'the surprise merger is confidential' }],
    });
    const alice = await person('alice@acme.test');
    const carolByLink = await person('carol.d@elsewhere.test', { source: 'slack', external_id: 'U3' });
    const bob = await person('bob@acme.test');
    const { pairId } = await slackPair({ channels: ['general', 'board-room'] }, {}, 'poll', 'sync');
    await pass();
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    const party = 'C4__1767225660.000800';
    expect(await sees(alice, 'surprise merger', party)).toBe(true);
    expect(await sees(carolByLink, 'surprise merger', party)).toBe(true);
    expect(await sees(bob, 'surprise merger', party)).toBe(false);
    // Public channels are open to everyone.
    expect(await sees(bob, 'lunch noon', 'C1__1767225900.000400')).toBe(true);
  });

  it('sync access is refreshed by every poll, though no message changed: a member leaves, a channel turns private', async () => {
    slack.channels.push(
      {
        id: 'C8',
        name: 'war-room',
        is_private: true,
        is_member: true,
        members: ['U1', 'U3'],
        messages: [{ ts: '1767225670.000900', user: 'U1', text: 'the secret heron strategy' }],
      },
      {
        id: 'C9',
        name: 'town-hall',
        is_private: false,
        is_member: true,
        members: ['U1', 'U2', 'U3'],
        messages: [{ ts: '1767225680.001000', user: 'U2', text: 'the open heron announcement' }],
      },
    );
    const alice = await person('alice.r@acme.test', { source: 'slack', external_id: 'U1' });
    const carol = await person('carol.r@acme.test', { source: 'slack', external_id: 'U3' });
    const bob = await person('bob.r@acme.test', { source: 'slack', external_id: 'U2' });
    const { connectorId, pairId } = await slackPair(
      { channels: ['war-room', 'town-hall'] },
      {},
      'poll',
      'sync',
    );
    await settle(pairId);
    const strategy = 'C8__1767225670.000900';
    const announcement = 'C9__1767225680.001000';
    expect(await sees(carol, 'secret heron strategy', strategy)).toBe(true);
    expect(await sees(bob, 'open heron announcement', announcement)).toBe(true);
    // Carol leaves the war room; the town hall becomes private without Bob.
    const [warRoom, townHall] = [slack.channels.at(-2), slack.channels.at(-1)];
    if (warRoom) warRoom.members = ['U1'];
    if (townHall) Object.assign(townHall, { is_private: true, members: ['U1', 'U3'] });
    await admin().connectors.runOnce({ connector_id: connectorId });
    await settle(pairId);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success', total_docs_indexed: 0 });
    expect(await sees(carol, 'secret heron strategy', strategy)).toBe(false);
    expect(await sees(alice, 'secret heron strategy', strategy)).toBe(true);
    expect(await sees(bob, 'open heron announcement', announcement)).toBe(false);
    expect(await sees(carol, 'open heron announcement', announcement)).toBe(true);
  });
  it('a prune run (prune_freq) removes threads deleted from the channels', async () => {
    const { connectorId, pairId } = await slackPair({ channels: ['general'] });
    await admin().connectors.update({ connector_id: connectorId, prune_freq: 300 });
    await pass();
    expect(await docIds(pairId)).toHaveLength(3);
    const general = slack.channels[0];
    if (general) general.messages = general.messages.filter((m) => m.ts !== '1767226100.000600');
    await sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`.execute(
      t.deps.db,
    );
    await pass();
    expect(await docIds(pairId)).toEqual(['C1__1767225600.000100', 'C1__1767225900.000400']);
  });
});
