import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Slack Web API (the subset the slack connector calls): auth.test, conversations.list,
 * conversations.history, conversations.replies, conversations.members and users.info; cursor
 * pagination (`response_metadata.next_cursor`), bearer tokens (`ok: false, error: invalid_auth`),
 * 429 with Retry-After, `not_in_channel` and `thread_not_found` as Slack answers them;
 * `conversations.join` (POST, scope `channels:join`) for public channels.
 *
 * Rate limits as Slack documents them (docs.slack.dev/apis/web-api/rate-limits), when `tiers` is set:
 * each method has its tier's allowance per minute per workspace (Tier 2: 20, Tier 3: 50, Tier 4: 100;
 * `conversations.list` is Tier 2, `history`/`replies`/`info` Tier 3, `members`/`users.info` Tier 4),
 * past which it answers 429 with `Retry-After` (seconds until the window frees); `nonMarketplace`
 * applies the 2025-05-29 limits of commercially distributed non-Marketplace apps to
 * `conversations.history` and `conversations.replies`: 1 request a minute, `limit` at most 15.
 */
export interface FakeSlackMessage {
  ts: string;
  user: string;
  text: string;
  /** Set on replies (and on a thread's parent, equal to its ts). */
  thread_ts?: string;
  subtype?: string;
}
export interface FakeChannel {
  id: string;
  name: string;
  is_private: boolean;
  is_member: boolean;
  members: string[];
  messages: FakeSlackMessage[];
}
export interface FakeSlackUser {
  id: string;
  name: string;
  real_name: string;
  display_name: string;
  email: string;
}
export interface FakeSlack {
  url: string;
  token: string;
  channels: FakeChannel[];
  users: FakeSlackUser[];
  /** Largest page the API answers, whatever `limit` asks. */
  pageSize: number;
  rateLimit: { remaining: number; retryAfter: number };
  /** Per-method tier allowances (scaled by `scale`) per window of `windowMs` (Slack's: a minute); null: none. */
  tiers: { windowMs: number; scale: number; nonMarketplace?: boolean } | null;
  /** Methods called, with their query (a POST's form arguments as a query, prefixed `POST `). */
  requests: string[];
  /** Scopes the bot token has, where a method checks one (`conversations.join` needs `channels:join`). */
  scopes: Set<string>;
  close(): Promise<void>;
}

export async function startFakeSlack(): Promise<FakeSlack> {
  const slack = {
    token: 'xoxb-good',
    channels: [] as FakeChannel[],
    users: [] as FakeSlackUser[],
    pageSize: 200,
    rateLimit: { remaining: 0, retryAfter: 1 },
    tiers: null as FakeSlack['tiers'],
    requests: [] as string[],
    scopes: new Set<string>(['channels:join']),
  };
  const TIER: Record<string, number> = {
    'conversations.list': 20,
    'conversations.history': 50,
    'conversations.replies': 50,
    'conversations.info': 50,
    'conversations.members': 100,
    'conversations.join': 50,
    'users.info': 100,
  };
  const windows = new Map<string, { start: number; used: number }>();
  /** Seconds to wait when `method` is over its tier's allowance in the current window, else null. */
  const overTier = (method: string): number | null => {
    const tiers = slack.tiers;
    const base = TIER[method];
    if (!tiers || base === undefined) return null;
    const strict =
      tiers.nonMarketplace && (method === 'conversations.history' || method === 'conversations.replies');
    const allowance = strict ? 1 : Math.max(1, Math.floor(base * tiers.scale));
    const now = Date.now();
    let window = windows.get(method);
    if (!window || now - window.start >= tiers.windowMs) {
      window = { start: now, used: 0 };
      windows.set(method, window);
    }
    if (window.used >= allowance) return Math.max(1, Math.ceil((window.start + tiers.windowMs - now) / 1000));
    window.used++;
    return null;
  };
  const send = (res: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.end(JSON.stringify(body));
  };
  const page = <T>(params: URLSearchParams, items: T[], method = '') => {
    const capped =
      slack.tiers?.nonMarketplace &&
      (method === 'conversations.history' || method === 'conversations.replies')
        ? 15
        : Number.POSITIVE_INFINITY;
    const limit = Math.min(slack.pageSize, capped, Number(params.get('limit') ?? 100));
    const offset = params.get('cursor')
      ? Number(Buffer.from(params.get('cursor') as string, 'base64').toString())
      : 0;
    const next = offset + limit < items.length ? Buffer.from(String(offset + limit)).toString('base64') : '';
    return { items: items.slice(offset, offset + limit), meta: { next_cursor: next }, has_more: next !== '' };
  };
  const isTop = (m: FakeSlackMessage) => !m.thread_ts || m.thread_ts === m.ts;
  const server: Server = createServer((req, res) => {
    // Arguments come in the query string, or form-encoded in a POST body (docs.slack.dev "Using the Web API").
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => handle(req, res, body));
  });
  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = url.pathname.replace(/^\/api/, '').replace(/^\//, '');
    const q = url.searchParams;
    if (
      req.method === 'POST' &&
      (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')
    )
      for (const [k, v] of new URLSearchParams(body)) q.set(k, v);
    slack.requests.push(
      `${req.method === 'POST' ? 'POST ' : ''}${method}${req.method === 'POST' ? `?${q}` : url.search}`,
    );
    if (slack.rateLimit.remaining > 0) {
      slack.rateLimit.remaining--;
      return send(res, { ok: false, error: 'ratelimited' }, 429, {
        'retry-after': String(slack.rateLimit.retryAfter),
      });
    }
    if (req.headers.authorization !== `Bearer ${slack.token}`)
      return send(res, { ok: false, error: 'invalid_auth' });
    const wait = overTier(method);
    if (wait !== null)
      return send(res, { ok: false, error: 'ratelimited' }, 429, { 'retry-after': String(wait) });
    const channel = slack.channels.find((c) => c.id === q.get('channel'));
    switch (method) {
      case 'auth.test':
        return send(res, { ok: true, url: 'https://acme.slack.com/', team: 'Acme', user_id: 'UBOT' });
      case 'conversations.list': {
        const p = page(
          q,
          slack.channels.map((c) => ({
            id: c.id,
            name: c.name,
            is_private: c.is_private,
            is_member: c.is_member,
          })),
        );
        return send(res, { ok: true, channels: p.items, response_metadata: p.meta });
      }
      case 'conversations.history': {
        if (!channel) return send(res, { ok: false, error: 'channel_not_found' });
        if (!channel.is_member) return send(res, { ok: false, error: 'not_in_channel' });
        const oldest = Number(q.get('oldest') ?? 0);
        const latest = Number(q.get('latest') ?? Number.POSITIVE_INFINITY);
        const top = channel.messages
          .filter((m) => isTop(m) && Number(m.ts) > oldest && Number(m.ts) <= latest)
          .sort((a, b) => Number(b.ts) - Number(a.ts))
          .map((m) => {
            const replies = channel.messages.filter((r) => r.thread_ts === m.ts && r.ts !== m.ts);
            const latest = replies.map((r) => r.ts).sort((a, b) => Number(b) - Number(a))[0];
            return {
              type: 'message',
              ...m,
              ...(latest ? { thread_ts: m.ts, reply_count: replies.length, latest_reply: latest } : {}),
            };
          });
        const p = page(q, top, method);
        return send(res, { ok: true, messages: p.items, has_more: p.has_more, response_metadata: p.meta });
      }
      case 'conversations.replies': {
        if (!channel) return send(res, { ok: false, error: 'channel_not_found' });
        const ts = q.get('ts');
        const parent = channel.messages.find((m) => m.ts === ts && isTop(m));
        if (!parent) return send(res, { ok: false, error: 'thread_not_found' });
        const thread = [parent, ...channel.messages.filter((m) => m.thread_ts === ts && m.ts !== ts)]
          .sort((a, b) => Number(a.ts) - Number(b.ts))
          .map((m) => ({ type: 'message', ...m, thread_ts: ts }));
        const p = page(q, thread, method);
        return send(res, { ok: true, messages: p.items, has_more: p.has_more, response_metadata: p.meta });
      }
      case 'conversations.info': {
        if (!channel) return send(res, { ok: false, error: 'channel_not_found' });
        return send(res, {
          ok: true,
          channel: {
            id: channel.id,
            name: channel.name,
            is_private: channel.is_private,
            is_member: channel.is_member,
          },
        });
      }
      case 'conversations.join': {
        // conversations.join (scope channels:join): public channels only; a private one answers
        // method_not_supported_for_channel_type. Joining a channel the bot is in is a no-op.
        if (req.method !== 'POST') return send(res, { ok: false, error: 'invalid_arguments' });
        if (!slack.scopes.has('channels:join')) return send(res, { ok: false, error: 'missing_scope' });
        if (!channel) return send(res, { ok: false, error: 'channel_not_found' });
        if (channel.is_private)
          return send(res, { ok: false, error: 'method_not_supported_for_channel_type' });
        channel.is_member = true;
        return send(res, { ok: true, channel: { id: channel.id, name: channel.name } });
      }
      case 'conversations.members': {
        if (!channel) return send(res, { ok: false, error: 'channel_not_found' });
        const p = page(q, channel.members);
        return send(res, { ok: true, members: p.items, response_metadata: p.meta });
      }
      case 'users.info': {
        const user = slack.users.find((u) => u.id === q.get('user'));
        if (!user) return send(res, { ok: false, error: 'user_not_found' });
        return send(res, {
          ok: true,
          user: {
            id: user.id,
            name: user.name,
            real_name: user.real_name,
            profile: { display_name: user.display_name, real_name: user.real_name, email: user.email },
          },
        });
      }
      default:
        return send(res, { ok: false, error: 'unknown_method' }, 404);
    }
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(slack, {
    url: `http://127.0.0.1:${port}/api`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  }) as FakeSlack;
}
