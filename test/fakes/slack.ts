import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Slack Web API (the subset the slack connector calls): auth.test, conversations.list,
 * conversations.history, conversations.replies, conversations.members and users.info; cursor
 * pagination (`response_metadata.next_cursor`), bearer tokens (`ok: false, error: invalid_auth`),
 * 429 with Retry-After, `not_in_channel` and `thread_not_found` as Slack answers them.
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
  /** Methods called, with their query. */
  requests: string[];
  close(): Promise<void>;
}

export async function startFakeSlack(): Promise<FakeSlack> {
  const slack = {
    token: 'xoxb-good',
    channels: [] as FakeChannel[],
    users: [] as FakeSlackUser[],
    pageSize: 200,
    rateLimit: { remaining: 0, retryAfter: 1 },
    requests: [] as string[],
  };
  const send = (res: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.end(JSON.stringify(body));
  };
  const page = <T>(params: URLSearchParams, items: T[]) => {
    const limit = Math.min(slack.pageSize, Number(params.get('limit') ?? 100));
    const offset = params.get('cursor')
      ? Number(Buffer.from(params.get('cursor') as string, 'base64').toString())
      : 0;
    const next = offset + limit < items.length ? Buffer.from(String(offset + limit)).toString('base64') : '';
    return { items: items.slice(offset, offset + limit), meta: { next_cursor: next }, has_more: next !== '' };
  };
  const isTop = (m: FakeSlackMessage) => !m.thread_ts || m.thread_ts === m.ts;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = url.pathname.replace(/^\/api/, '').replace(/^\//, '');
    const q = url.searchParams;
    slack.requests.push(`${method}${url.search}`);
    if (slack.rateLimit.remaining > 0) {
      slack.rateLimit.remaining--;
      return send(res, { ok: false, error: 'ratelimited' }, 429, {
        'retry-after': String(slack.rateLimit.retryAfter),
      });
    }
    if (req.headers.authorization !== `Bearer ${slack.token}`)
      return send(res, { ok: false, error: 'invalid_auth' });
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
        const p = page(q, top);
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
        const p = page(q, thread);
        return send(res, { ok: true, messages: p.items, has_more: p.has_more, response_metadata: p.meta });
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
  });
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
