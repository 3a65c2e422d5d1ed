import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { retryAfterMs } from '../../outbound/outbound.ts';
import { getJson } from './http.ts';
import { rateLimitedUntil } from './limits.ts';
import {
  type EventVerdict,
  type ExternalAccess,
  type JsonValue,
  type LoadArgs,
  type PermissionEntry,
  type Source,
  type SourceBatch,
  type SourceDocument,
  type SourceDocumentFailure,
  SourceError,
  type SourceEvent,
  type SourceRunContext,
  validateWith,
} from './source.ts';

const SlackConfig = z
  .object({
    base_url: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
      .default('https://slack.com/api'),
    /** Channel names (without `#`), or regular expressions when `channel_regex_enabled`; absent: every public channel and the private ones the bot is in. */
    channels: z.array(z.string().trim().min(1)).optional(),
    channel_regex_enabled: z.boolean().default(false),
    /**
     * Join the selected public channels the bot is not a member of (`conversations.join`, which needs
     * the `channels:join` scope), so that they are indexed; off: such channels are reported on each
     * run until someone invites the bot.
     */
    join_public_channels: z.boolean().default(false),
    /**
     * Polls also look this far back for threads whose `latest_reply` is newer than the last run (new
     * replies to older threads); 0: only messages posted since the last run.
     */
    thread_lookback_days: z.number().min(0).max(365).default(30),
    /**
     * How often a poll looks back `thread_lookback_days` for new replies to older threads: the first
     * poll after each multiple of this many hours (UTC) does; the polls in between read only the
     * current period's history. 0: every poll (each then re-reads the whole lookback of every channel).
     */
    thread_lookback_every_hours: z
      .number()
      .min(0)
      .max(24 * 365)
      .default(24),
  })
  .superRefine((config, issue) => {
    if (!config.channel_regex_enabled) return;
    for (const [i, pattern] of (config.channels ?? []).entries()) {
      try {
        new RegExp(pattern);
      } catch {
        issue.addIssue({ code: 'custom', path: ['channels', i], message: 'not a valid regular expression' });
      }
    }
  });
export type SlackConfig = z.infer<typeof SlackConfig>;

const SlackCredential = z.object({
  slack_bot_token: z.string().trim().min(1, 'a bot token (xoxb-…)'),
  /** The app's signing secret, for `input_type: event` (Events API). */
  slack_signing_secret: z.string().min(1).optional(),
});
export type SlackCredential = z.infer<typeof SlackCredential>;

interface Channel {
  id: string;
  name: string;
  is_private: boolean;
  /** Whether the bot is in the channel (as listed; absent when unknown). */
  is_member?: boolean;
}
interface Message {
  ts: string;
  thread_ts?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  text?: string;
  subtype?: string;
  reply_count?: number;
  /** On a thread's parent in `conversations.history`: the ts of its newest reply. */
  latest_reply?: string;
}
interface SlackUser {
  id: string;
  name?: string;
  real_name?: string;
  profile?: { display_name?: string; real_name?: string; email?: string };
  deleted?: boolean;
}
type Answer = { ok: boolean; error?: string; response_metadata?: { next_cursor?: string } };

interface Checkpoint {
  channels: Channel[];
  index: number;
  cursor: string | null;
  workspace: string;
}

type Args = SourceRunContext<SlackConfig, SlackCredential>;

const SKIPPED_SUBTYPES = new Set([
  'channel_join',
  'channel_leave',
  'channel_archive',
  'channel_unarchive',
  'group_join',
  'group_leave',
]);
const AUTH_ERRORS = new Set([
  'invalid_auth',
  'not_authed',
  'token_revoked',
  'token_expired',
  'account_inactive',
]);

/** One Web API method (GET with query parameters); Slack reports most failures as `ok: false`. */
async function call<T extends Answer>(
  args: Args,
  method: string,
  params: Record<string, string>,
): Promise<T> {
  const url = `${args.config.base_url.replace(/\/+$/, '')}/${method}?${new URLSearchParams(params)}`;
  const result = await getJson<T>(args, url, {
    headers: { authorization: `Bearer ${args.credential.slack_bot_token}` },
    service: 'Slack',
  });
  if (!result) throw new SourceError('config', `Slack has no method ${method} at ${args.config.base_url}`);
  const data = result.data;
  if (!data.ok) {
    const error = data.error ?? 'unknown_error';
    if (AUTH_ERRORS.has(error)) throw new SourceError('auth', `Slack refused the bot token (${error})`);
    if (error === 'ratelimited') {
      const wait = retryAfterMs(result.response.headers.get('retry-after'));
      throw rateLimitedUntil(
        'Slack',
        wait === null ? null : new Date(Date.now() + wait),
        'is rate limiting requests',
      );
    }
    if (error === 'missing_scope') throw new SourceError('auth', `The Slack app lacks a scope for ${method}`);
    return data;
  }
  return data;
}

class Users {
  readonly #cache = new Map<string, SlackUser | null>();
  readonly args: Args;
  constructor(args: Args) {
    this.args = args;
  }
  async get(id: string): Promise<SlackUser | null> {
    if (this.#cache.has(id)) return this.#cache.get(id) ?? null;
    const answer = await call<Answer & { user?: SlackUser }>(this.args, 'users.info', { user: id });
    const user = answer.ok ? (answer.user ?? null) : null;
    this.#cache.set(id, user);
    return user;
  }
  async name(id: string): Promise<string> {
    const user = await this.get(id);
    return user?.profile?.display_name || user?.profile?.real_name || user?.real_name || user?.name || id;
  }
}

/** Whether the configuration selects a channel (by name, or by a pattern when `channel_regex_enabled`). */
function wanted(config: SlackConfig, name: string): boolean {
  if (!config.channels?.length) return true;
  if (config.channel_regex_enabled) return config.channels.some((p) => new RegExp(`^(?:${p})$`).test(name));
  return config.channels.some((w) => w.replace(/^#/, '') === name);
}

/** One channel by id (`conversations.info`, Tier 3), null when gone, archived or not selected. */
async function channelById(args: Args, id: string): Promise<Channel | null> {
  const answer = await call<Answer & { channel?: Channel & { is_archived?: boolean } }>(
    args,
    'conversations.info',
    { channel: id },
  );
  const c = answer.ok ? answer.channel : undefined;
  if (!c || c.is_archived || !wanted(args.config, c.name)) return null;
  return { id: c.id, name: c.name, is_private: !!c.is_private };
}

/**
 * Joins a public channel (`conversations.join`, POST, scope `channels:join`). Returns why it could
 * not, or null once the bot is a member.
 */
async function joinChannel(args: Args, channel: Channel): Promise<string | null> {
  const url = `${args.config.base_url.replace(/\/+$/, '')}/conversations.join`;
  let response: Response;
  try {
    response = await args.fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${args.credential.slack_bot_token}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ channel: channel.id }).toString(),
      signal: args.signal,
    });
  } catch (error) {
    if (args.signal.aborted) throw error;
    throw new SourceError('transient', 'Slack could not be reached', { cause: error });
  }
  const data = (await response.json().catch(() => null)) as Answer | null;
  if (data?.error === 'ratelimited' || response.status === 429) {
    const wait = retryAfterMs(response.headers.get('retry-after'));
    throw rateLimitedUntil(
      'Slack',
      wait === null ? null : new Date(Date.now() + wait),
      'is rate limiting requests',
    );
  }
  if (data && AUTH_ERRORS.has(data.error ?? ''))
    throw new SourceError('auth', `Slack refused the bot token (${data.error})`);
  if (data?.ok) return null;
  return data?.error === 'missing_scope'
    ? 'the Slack app lacks the channels:join scope'
    : `Slack did not let the bot join (${data?.error ?? `HTTP ${response.status}`})`;
}

async function listChannels(args: Args): Promise<Channel[]> {
  const all: Channel[] = [];
  let cursor = '';
  do {
    const page = await call<Answer & { channels?: (Channel & { is_member?: boolean })[] }>(
      args,
      'conversations.list',
      {
        types: 'public_channel,private_channel',
        exclude_archived: 'true',
        limit: '200',
        ...(cursor ? { cursor } : {}),
      },
    );
    if (!page.ok) throw new SourceError('transient', `Slack could not list channels (${page.error})`);
    for (const c of page.channels ?? [])
      all.push({ id: c.id, name: c.name, is_private: !!c.is_private, is_member: !!c.is_member });
    cursor = page.response_metadata?.next_cursor ?? '';
  } while (cursor);
  const wanted = args.config.channels;
  if (!wanted?.length) return all;
  if (args.config.channel_regex_enabled) {
    const patterns = wanted.map((p) => new RegExp(`^(?:${p})$`));
    return all.filter((c) => patterns.some((p) => p.test(c.name)));
  }
  const names = new Set(wanted.map((w) => w.replace(/^#/, '')));
  const missing = [...names].filter((n) => !all.some((c) => c.name === n));
  if (missing.length)
    throw new SourceError(
      'config',
      `Slack channel(s) not found or not visible to the bot: ${missing.join(', ')}`,
    );
  return all.filter((c) => names.has(c.name));
}

function permalink(workspace: string, channel: string, ts: string, threadTs: string): string {
  const base = `${workspace.replace(/\/+$/, '')}/archives/${channel}/p${ts.replace('.', '')}`;
  return ts === threadTs ? base : `${base}?thread_ts=${threadTs}&cid=${channel}`;
}

async function resolveMentions(text: string, users: Users): Promise<string> {
  const ids = [...new Set([...text.matchAll(/<@([A-Z0-9]+)(?:\|[^>]*)?>/g)].map((m) => m[1] as string))];
  let out = text;
  for (const id of ids)
    out = out.replace(new RegExp(`<@${id}(?:\\|[^>]*)?>`, 'g'), `@${await users.name(id)}`);
  return out;
}

const docId = (channel: string, threadTs: string) => `${channel}__${threadTs}`;

/**
 * Who may see a channel's threads (`sync` access only): a public channel is open to the whole
 * workspace (public in kas); a private one to its members, by email and by Slack user id.
 */
async function channelAccess(
  args: Args,
  channel: Channel,
  users: Users,
  cache: Map<string, ExternalAccess>,
): Promise<ExternalAccess | undefined> {
  if (args.accessType !== 'sync') return undefined;
  const known = cache.get(channel.id);
  if (known) return known;
  let access: ExternalAccess;
  if (!channel.is_private) {
    access = { is_public: true, user_emails: [], external_group_ids: [] };
  } else {
    const emails: string[] = [];
    const ids: string[] = [];
    let cursor = '';
    do {
      const page = await call<Answer & { members?: string[] }>(args, 'conversations.members', {
        channel: channel.id,
        limit: '200',
        ...(cursor ? { cursor } : {}),
      });
      for (const member of page.members ?? []) {
        ids.push(member);
        const email = (await users.get(member))?.profile?.email;
        if (email) emails.push(email);
      }
      cursor = page.ok ? (page.response_metadata?.next_cursor ?? '') : '';
    } while (cursor);
    access = { is_public: false, user_emails: emails, external_group_ids: [], user_ids: ids };
  }
  cache.set(channel.id, access);
  return access;
}

async function threadDocument(
  args: Args,
  workspace: string,
  channel: Channel,
  messages: Message[],
  users: Users,
  access: Map<string, ExternalAccess>,
): Promise<SourceDocument | null> {
  const kept = messages.filter((m) => !m.subtype || !SKIPPED_SUBTYPES.has(m.subtype));
  const first = kept[0];
  if (!first) return null;
  const threadTs = first.thread_ts ?? first.ts;
  const sections: { text: string; link: string }[] = [];
  for (const m of kept) {
    const who = m.user ? await users.name(m.user) : (m.username ?? 'bot');
    sections.push({
      text: `${who}: ${await resolveMentions(m.text ?? '', users)}`,
      link: permalink(workspace, channel.id, m.ts, threadTs),
    });
  }
  const starter = first.user ? await users.get(first.user) : null;
  const snippet = (sections[0]?.text ?? '').replace(/^[^:]*: /, '').slice(0, 60);
  const latest = Math.max(...kept.map((m) => Number.parseFloat(m.ts)));
  return {
    id: docId(channel.id, threadTs),
    semantic_identifier: `#${channel.name}: ${snippet}`,
    title: `#${channel.name}`,
    sections,
    metadata: { channel: channel.name },
    doc_updated_at: new Date(latest * 1000),
    primary_owners: starter
      ? [{ display_name: await users.name(starter.id), email: starter.profile?.email ?? null }]
      : [],
    external_access: await channelAccess(args, channel, users, access),
  };
}

async function replies(args: Args, channel: string, ts: string): Promise<Message[] | null> {
  const messages: Message[] = [];
  let cursor = '';
  do {
    const page = await call<Answer & { messages?: Message[] }>(args, 'conversations.replies', {
      channel,
      ts,
      limit: '200',
      ...(cursor ? { cursor } : {}),
    });
    if (!page.ok) {
      if (page.error === 'thread_not_found' || page.error === 'message_not_found') return null;
      throw new SourceError('transient', `Slack could not read a thread (${page.error})`);
    }
    messages.push(...(page.messages ?? []));
    cursor = page.response_metadata?.next_cursor ?? '';
  } while (cursor);
  return messages;
}

async function workspaceUrl(args: Args): Promise<string> {
  const answer = await call<Answer & { url?: string }>(args, 'auth.test', {});
  if (!answer.ok) throw new SourceError('auth', `Slack refused the bot token (${answer.error})`);
  return answer.url ?? 'https://slack.com/';
}

/**
 * The history a poll reads (`oldest`, seconds) and since when a reply makes an older thread worth
 * re-reading. Re-reading the whole lookback of every channel on every poll costs tens of pages per
 * channel (Tier 3: about 50 a minute); so the lookback is read by the first poll of each period of
 * `thread_lookback_every_hours`, catching the replies of the whole previous period, and the polls in
 * between read only the current period (threads started in it get their new replies at once).
 */
function pollRange(
  config: SlackConfig,
  window: { start: Date | null; end: Date },
): { oldest: string | null; repliedSince: number | null } {
  if (!window.start) return { oldest: null, repliedSince: null };
  const since = window.start.getTime();
  const end = window.end.getTime();
  const every = config.thread_lookback_every_hours * 3_600_000;
  const lookbackFrom = end - config.thread_lookback_days * 86_400_000;
  if (every <= 0) return { oldest: (Math.min(since, lookbackFrom) / 1000).toFixed(6), repliedSince: null };
  const period = Math.floor(end / every) * every;
  if (since < period) {
    const from = Math.min(since, lookbackFrom);
    return { oldest: (from / 1000).toFixed(6), repliedSince: Math.min(since, period - every) / 1000 };
  }
  return { oldest: (Math.min(since, Math.max(period, lookbackFrom)) / 1000).toFixed(6), repliedSince: null };
}

async function* load(args: LoadArgs<SlackConfig, SlackCredential>): AsyncIterable<SourceBatch> {
  const saved = args.checkpoint as unknown as Checkpoint | null;
  const workspace = saved?.workspace ?? (await workspaceUrl(args));
  const channels = saved?.channels ?? (await listChannels(args));
  let cp: Checkpoint = saved ?? { channels, index: 0, cursor: null, workspace };
  const users = new Users(args);
  const access = new Map<string, ExternalAccess>();
  // A poll reads messages posted since the last run, and the parents of the lookback period whose
  // newest reply is since the last run (Slack lists threads by their first message only).
  const since = args.window.start ? args.window.start.getTime() / 1000 : null;
  const { oldest, repliedSince } = pollRange(args.config, args.window);
  while (cp.index < channels.length) {
    const channel = channels[cp.index] as Channel;
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    let notJoined: string | null = null;
    if (
      args.config.join_public_channels &&
      !channel.is_private &&
      channel.is_member === false &&
      !cp.cursor
    ) {
      notJoined = await joinChannel(args, channel);
      if (!notJoined) channel.is_member = true;
    }
    const page = await call<Answer & { messages?: Message[]; has_more?: boolean }>(
      args,
      'conversations.history',
      {
        channel: channel.id,
        limit: '100',
        latest: (args.window.end.getTime() / 1000).toFixed(6),
        ...(oldest ? { oldest } : {}),
        ...(cp.cursor ? { cursor: cp.cursor } : {}),
      },
    );
    if (!page.ok) {
      failures.push({
        document_id: null,
        message:
          page.error === 'not_in_channel'
            ? notJoined
              ? `The Slack bot could not join #${channel.name}: ${notJoined}`
              : `The Slack bot is not a member of #${channel.name}: invite it to the channel${channel.is_private ? '' : ', or set join_public_channels'}`
            : `Slack could not read #${channel.name} (${page.error})`,
      });
    }
    for (const message of page.messages ?? []) {
      if (message.subtype && SKIPPED_SUBTYPES.has(message.subtype)) continue;
      // Replies come with their thread; only thread starters and plain messages start a document.
      if (message.thread_ts && message.thread_ts !== message.ts) continue;
      // Older than the last run: only a thread with a newer reply changed.
      if (
        since !== null &&
        Number(message.ts) <= since &&
        !(Number(message.latest_reply ?? 0) > (repliedSince ?? since))
      )
        continue;
      const thread = (message.reply_count ?? 0) > 0 ? await replies(args, channel.id, message.ts) : [message];
      if (!thread) continue;
      const doc = await threadDocument(args, workspace, channel, thread, users, access);
      if (doc) documents.push(doc);
    }
    const cursor = page.ok ? page.response_metadata?.next_cursor || null : null;
    cp = cursor ? { ...cp, cursor } : { ...cp, index: cp.index + 1, cursor: null };
    const done = cp.index >= channels.length;
    yield { documents, failures, checkpoint: done ? null : (cp as unknown as JsonValue) };
  }
}

/** Slack Events API: the signing secret over `v0:{timestamp}:{body}`, deliveries older than 5 minutes refused. */
function verify(event: SourceEvent<SlackCredential>): EventVerdict {
  const secret = event.credential.slack_signing_secret;
  if (!secret) return { ok: false, reason: 'the credential has no slack_signing_secret' };
  const timestamp = event.headers['x-slack-request-timestamp'] ?? '';
  if (!/^\d+$/.test(timestamp) || Math.abs(event.now.getTime() / 1000 - Number(timestamp)) > 300)
    return { ok: false, reason: 'stale or missing timestamp' };
  const expected = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${event.rawBody}`).digest('hex')}`;
  const given = Buffer.from(event.headers['x-slack-signature'] ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, Buffer.from(expected)))
    return { ok: false, reason: 'bad signature' };
  let payload: {
    type?: string;
    challenge?: string;
    event_id?: string;
    event?: {
      type?: string;
      subtype?: string;
      channel?: string;
      ts?: string;
      thread_ts?: string;
      deleted_ts?: string;
      message?: { ts?: string; thread_ts?: string };
      previous_message?: { ts?: string; thread_ts?: string };
    };
  };
  try {
    payload = JSON.parse(event.rawBody);
  } catch {
    return { ok: true, refs: [] };
  }
  if (payload.type === 'url_verification') return { ok: true, refs: [], challenge: payload.challenge ?? '' };
  const e = payload.event;
  if (payload.type !== 'event_callback' || e?.type !== 'message' || !e.channel) return { ok: true, refs: [] };
  const thread =
    e.thread_ts ??
    e.message?.thread_ts ??
    e.previous_message?.thread_ts ??
    e.message?.ts ??
    e.deleted_ts ??
    e.ts;
  if (!thread) return { ok: true, refs: [] };
  const deliveryId = typeof payload.event_id === 'string' ? payload.event_id : undefined;
  return {
    ok: true,
    refs: [{ channel: e.channel, thread_ts: thread }],
    ...(deliveryId ? { deliveryId } : {}),
  };
}

async function fetchRefs(
  args: Args,
  refs: JsonValue[],
): Promise<{ documents: SourceDocument[]; deleted: string[] }> {
  const documents: SourceDocument[] = [];
  const deleted: string[] = [];
  if (!refs.length) return { documents, deleted };
  const workspace = await workspaceUrl(args);
  const users = new Users(args);
  const access = new Map<string, ExternalAccess>();
  // Each delivery names its channel: read that one (Tier 3), not the whole channel list (Tier 2).
  const channels = new Map<string, Promise<Channel | null>>();
  for (const ref of refs as { channel: string; thread_ts: string }[]) {
    if (!channels.has(ref.channel)) channels.set(ref.channel, channelById(args, ref.channel));
    const channel = await channels.get(ref.channel);
    if (!channel) continue;
    const thread = await replies(args, channel.id, ref.thread_ts);
    const doc = thread && (await threadDocument(args, workspace, channel, thread, users, access));
    if (doc) documents.push(doc);
    else deleted.push(docId(channel.id, ref.thread_ts));
  }
  return { documents, deleted };
}

/**
 * Every thread the channels still have (for `prune_freq`). A channel the bot is not in lists nothing (its
 * threads can no longer be read); any other failure fails the listing, which then removes nothing.
 */
async function* listIds(args: Args): AsyncIterable<string[]> {
  for (const channel of await listChannels(args)) {
    let cursor = '';
    do {
      const page = await call<Answer & { messages?: Message[] }>(args, 'conversations.history', {
        channel: channel.id,
        limit: '200',
        ...(cursor ? { cursor } : {}),
      });
      if (!page.ok) {
        if (page.error === 'not_in_channel') break;
        throw new SourceError('transient', `Slack could not list #${channel.name} (${page.error})`);
      }
      yield (page.messages ?? [])
        .filter(
          (m) => !(m.subtype && SKIPPED_SUBTYPES.has(m.subtype)) && (!m.thread_ts || m.thread_ts === m.ts),
        )
        .map((m) => docId(channel.id, m.ts));
      cursor = page.response_metadata?.next_cursor ?? '';
    } while (cursor);
  }
}

/**
 * Current access of every channel's threads (`sync` pairs, on every run): someone leaving a private
 * channel, or a channel made private, changes no message, so polls would not see it. Read per channel
 * (public, or its members) and applied to every thread of it.
 */
async function* permissions(args: Args): AsyncIterable<PermissionEntry[]> {
  const users = new Users(args);
  const cache = new Map<string, ExternalAccess>();
  for (const channel of await listChannels(args)) {
    const access = await channelAccess(args, channel, users, cache);
    if (access) yield [{ document_id_prefix: `${channel.id}__`, access }];
  }
}

/** Slack: one document per thread (or lone message) of the chosen channels, user names resolved. */
export const slackSource: Source<SlackConfig, SlackCredential> = {
  name: 'slack',
  displayName: 'Slack',
  needsCredential: true,
  inputTypes: ['poll', 'load_state', 'event'],
  validateConfig: (raw) => validateWith(SlackConfig, raw),
  validateCredential: (raw) => validateWith(SlackCredential, raw),
  secretTargets: (config) => [{ key: 'connector_specific_config.base_url', url: config.base_url }],
  load: (args) => load(args as LoadArgs<SlackConfig, SlackCredential>),
  listIds,
  permissions,
  events: { verify, fetch: fetchRefs },
};
