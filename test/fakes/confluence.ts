import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Confluence (Cloud / Data Center REST API v1, the subset kas calls): CQL content search with
 * cursor paging through `_links.next`, page attachments and their downloads, a space with its read
 * permissions, pages' read restrictions (with their ancestors'), group members; Basic (email + API token) or Bearer (personal access token) auth;
 * 429 with Retry-After on demand. Served under `/wiki` like Confluence Cloud.
 *
 * What Confluence does and the fake does too:
 * - CQL dates (`lastmodified >= "yyyy-MM-dd HH:mm"`) are read in the site's time zone, not UTC
 *   (CONFCLOUD-70966, "content search is using the instance's timezone"; `timeZoneOffsetMinutes`);
 * - a content search expanding `ancestors.restrictions…` answers 404 for the whole page when one
 *   ancestor is a draft, outdated or trashed (CONFCLOUD-77618 / CONFCLOUD-76424, as Onyx documents
 *   them; a page's `brokenAncestor`), while `restriction/byOperation/read` of each page still answers;
 * - Data Center (a Bearer personal access token here) ignores `expand=permissions` on a space; 9.1+
 *   lists them at `/rest/api/space/{key}/permissions`, users by `userKey` (CONFSERVER-100505),
 *   resolved with `/rest/api/user?key=`;
 * - attachments list their size in `extensions.fileSize` (Get attachments, REST API v1).
 */
export interface FakeConfluencePage {
  id: string;
  title: string;
  space: string;
  /** Storage format (XHTML). */
  body: string;
  /** Ids of the page's ancestors, root first. */
  ancestors: string[];
  modified: Date;
  author?: { displayName: string; email?: string; accountId: string };
  attachments: { id: string; title: string; mediaType: string; content: Buffer }[];
  /** Read restrictions of the page (users by account, groups by name); absent: none. */
  restrictions?: { users?: { accountId: string; email?: string }[]; groups?: string[] };
  /** One of its ancestors is a draft or trashed: expanding the ancestors' restrictions 404s (CONFCLOUD-77618). */
  brokenAncestor?: boolean;
}

export interface FakeConfluenceSpacePermission {
  users?: { accountId: string; email?: string }[];
  groups?: string[];
  anonymous?: boolean;
}

export interface FakeConfluence {
  /** The wiki base to configure (`…/wiki`). */
  url: string;
  pages: Map<string, FakeConfluencePage>;
  spaces: Map<string, FakeConfluenceSpacePermission>;
  groups: Map<string, { accountId: string; email?: string }[]>;
  /** Accepted credentials: Basic `email:token` pairs and Bearer tokens. */
  basic: Set<string>;
  bearer: Set<string>;
  /** Results per search page (the API's `limit` is capped at this). */
  pageSize: number;
  /** The next N API requests answer 429 with this Retry-After (seconds). */
  rateLimit: { remaining: number; retryAfter: number };
  /** Requests by path (without the query). */
  hits: Map<string, number>;
  /** The CQL of every search request. */
  queries: string[];
  /** The site's time zone, minutes east of UTC (−300 for UTC−5): how CQL dates are read. */
  timeZoneOffsetMinutes: number;
  close(): Promise<void>;
}

/** Evaluates the CQL kas sends: `type=page and space="K" [and (id=N or ancestor=N)] [and lastmodified >= "yyyy-MM-dd HH:mm"]`. */
function matches(page: FakeConfluencePage, cql: string, offsetMinutes: number): boolean {
  const space = /space="([^"]+)"/.exec(cql)?.[1];
  if (space !== undefined && page.space !== space) return false;
  const under = /\(id=(\d+) or ancestor=(\d+)\)/.exec(cql);
  if (under && page.id !== under[1] && !page.ancestors.includes(under[1] as string)) return false;
  const since = /lastmodified >= "(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})"/.exec(cql);
  const localWall = since ? Date.parse(`${since[1]}T${since[2]}:00Z`) : 0;
  if (since && page.modified.getTime() < localWall - offsetMinutes * 60_000) return false;
  return true;
}

/** As Confluence expands `restrictions.read.restrictions.user,restrictions.read.restrictions.group`. */
function restrictionsJson(page: FakeConfluencePage) {
  const users = page.restrictions?.users ?? [];
  const groups = page.restrictions?.groups ?? [];
  return {
    read: {
      operation: 'read',
      restrictions: {
        user: { results: users.map((u) => ({ type: 'known', ...u })), size: users.length },
        group: { results: groups.map((name) => ({ type: 'group', name })), size: groups.length },
      },
    },
  };
}

export async function startFakeConfluence(): Promise<FakeConfluence> {
  const state: Omit<FakeConfluence, 'url' | 'close'> = {
    pages: new Map(),
    spaces: new Map(),
    groups: new Map(),
    basic: new Set(),
    bearer: new Set(),
    pageSize: 2,
    rateLimit: { remaining: 0, retryAfter: 1 },
    hits: new Map(),
    queries: [],
    timeZoneOffsetMinutes: 0,
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  };
  const authorised = (req: IncomingMessage) => {
    const header = req.headers.authorization ?? '';
    if (header.startsWith('Basic '))
      return state.basic.has(Buffer.from(header.slice(6), 'base64').toString());
    if (header.startsWith('Bearer ')) return state.bearer.has(header.slice(7));
    return false;
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    state.hits.set(path, (state.hits.get(path) ?? 0) + 1);
    if (!path.startsWith('/wiki/')) return json(res, 404, { message: 'not found' });
    if (!authorised(req)) return json(res, 401, { message: 'Unauthorized' });
    if (state.rateLimit.remaining > 0) {
      state.rateLimit.remaining--;
      res.setHeader('retry-after', String(state.rateLimit.retryAfter));
      return json(res, 429, { message: 'Rate limited' });
    }
    // A personal access token (Bearer) is Data Center's credential: the fake answers as Data Center.
    const dataCenter = (req.headers.authorization ?? '').startsWith('Bearer ');
    const base = `http://${req.headers.host}/wiki`;
    const limit = Math.min(Number(url.searchParams.get('limit') ?? 25), state.pageSize);
    const start = Number(url.searchParams.get('cursor') ?? url.searchParams.get('start') ?? 0);
    const expand = (url.searchParams.get('expand') ?? '').split(',');
    const paged = <T>(items: T[], nextParams: URLSearchParams) => {
      const slice = items.slice(start, start + limit);
      const more = start + limit < items.length;
      if (more) nextParams.set('cursor', String(start + limit));
      return { slice, next: more ? `${path.replace(/^\/wiki/, '')}?${nextParams}` : undefined };
    };

    if (path === '/wiki/rest/api/content/search') {
      const cql = url.searchParams.get('cql') ?? '';
      state.queries.push(cql);
      const found = [...state.pages.values()]
        .filter((p) => matches(p, cql, state.timeZoneOffsetMinutes))
        .sort((a, b) => Number(a.id) - Number(b.id));
      const params = new URLSearchParams(url.searchParams);
      params.delete('cursor');
      const { slice, next } = paged(found, params);
      if (expand.some((e) => e.startsWith('ancestors.restrictions')) && slice.some((p) => p.brokenAncestor))
        return json(res, 404, {
          statusCode: 404,
          data: { authorized: true, valid: true, errors: [], successful: false },
          message: 'No content with id <ContentId{id=999}> can be found',
        });
      return json(res, 200, {
        results: slice.map((p) => ({
          id: p.id,
          type: 'page',
          status: 'current',
          title: p.title,
          ...(expand.includes('version')
            ? { version: { number: 1, when: p.modified.toISOString(), by: p.author ?? null } }
            : {}),
          ...(expand.includes('body.storage')
            ? { body: { storage: { value: p.body, representation: 'storage' } } }
            : {}),
          ...(expand.includes('restrictions.read.restrictions.user')
            ? { restrictions: restrictionsJson(p) }
            : {}),
          ...(expand.includes('ancestors.restrictions.read.restrictions.user')
            ? {
                ancestors: p.ancestors.map((id) => {
                  const ancestor = state.pages.get(id);
                  return {
                    id,
                    type: 'page',
                    ...(ancestor ? { restrictions: restrictionsJson(ancestor) } : {}),
                  };
                }),
              }
            : {}),
          _links: { webui: `/spaces/${p.space}/pages/${p.id}`, tinyui: `/x/${p.id}` },
        })),
        start,
        limit,
        size: slice.length,
        totalSize: found.length,
        _links: { base, context: '/wiki', ...(next ? { next } : {}) },
      });
    }
    const byOperation = /^\/wiki\/rest\/api\/content\/(\d+)\/restriction\/byOperation\/read$/.exec(path);
    if (byOperation) {
      const page = state.pages.get(byOperation[1] as string);
      if (!page)
        return json(res, 404, {
          message: 'Cannot find content. Outdated version/old_draft/trashed? Please provide valid ContentId.',
        });
      return json(res, 200, { operation: 'read', restrictions: restrictionsJson(page).read.restrictions });
    }
    const content = /^\/wiki\/rest\/api\/content\/(\d+)$/.exec(path);
    if (content) {
      const page = state.pages.get(content[1] as string);
      if (!page) return json(res, 404, { message: 'No content found' });
      return json(res, 200, {
        id: page.id,
        type: 'page',
        title: page.title,
        ...(expand.includes('ancestors')
          ? { ancestors: page.ancestors.map((id) => ({ id, type: 'page' })) }
          : {}),
      });
    }
    const attachments = /^\/wiki\/rest\/api\/content\/(\d+)\/child\/attachment$/.exec(path);
    if (attachments) {
      const page = state.pages.get(attachments[1] as string);
      if (!page) return json(res, 404, { message: 'No content found' });
      const params = new URLSearchParams(url.searchParams);
      params.delete('cursor');
      const { slice, next } = paged(page.attachments, params);
      return json(res, 200, {
        results: slice.map((a) => ({
          id: a.id,
          type: 'attachment',
          title: a.title,
          metadata: { mediaType: a.mediaType },
          extensions: { mediaType: a.mediaType, fileSize: a.content.length },
          version: { when: page.modified.toISOString() },
          _links: {
            download: `/download/attachments/${page.id}/${encodeURIComponent(a.title)}?version=1&api=v2`,
          },
        })),
        size: slice.length,
        _links: { base, ...(next ? { next } : {}) },
      });
    }
    const download = /^\/wiki\/download\/attachments\/(\d+)\/([^/]+)$/.exec(path);
    if (download) {
      const page = state.pages.get(download[1] as string);
      const att = page?.attachments.find((a) => a.title === decodeURIComponent(download[2] as string));
      if (!att) return json(res, 404, { message: 'not found' });
      res.setHeader('content-type', att.mediaType);
      return res.end(att.content);
    }
    const space = /^\/wiki\/rest\/api\/space\/([^/]+)$/.exec(path);
    if (space) {
      const key = decodeURIComponent(space[1] as string);
      const perms = state.spaces.get(key);
      if (!perms) return json(res, 404, { message: `No space with key : ${key}` });
      return json(res, 200, {
        key,
        name: key,
        type: 'global',
        // Data Center has no such expansion (its 9.1+ permissions API below answers instead).
        ...(expand.includes('permissions') && !dataCenter
          ? {
              permissions: [
                // Permissions other than read are listed too; kas must ignore them.
                {
                  operation: { operation: 'administer', targetType: 'space' },
                  subjects: { user: { results: [{ accountId: 'admin-only', email: 'boss@corp.example' }] } },
                },
                ...(perms.users?.length
                  ? [
                      {
                        operation: { operation: 'read', targetType: 'space' },
                        subjects: { user: { results: perms.users, size: perms.users.length } },
                      },
                    ]
                  : []),
                ...(perms.groups ?? []).map((name) => ({
                  operation: { operation: 'read', targetType: 'space' },
                  subjects: { group: { results: [{ type: 'group', name }], size: 1 } },
                })),
                ...(perms.anonymous
                  ? [{ operation: { operation: 'read', targetType: 'space' }, anonymousAccess: true }]
                  : []),
              ],
            }
          : {}),
        _links: { webui: `/spaces/${key}` },
      });
    }
    // Data Center 9.1+: `GET /rest/api/space/{key}/permissions`, users by userKey (CONFSERVER-100505).
    const dcPermissions = /^\/wiki\/rest\/api\/space\/([^/]+)\/permissions$/.exec(path);
    if (dcPermissions && dataCenter) {
      const key = decodeURIComponent(dcPermissions[1] as string);
      const perms = state.spaces.get(key);
      if (!perms) return json(res, 404, { message: `No space with key : ${key}` });
      const grant = (operationKey: string, subject: Record<string, string>) => ({
        operation: { targetType: 'space', operationKey },
        subject,
        spaceKey: key,
        spaceId: 131083,
      });
      return json(res, 200, [
        grant('administer', { type: 'user', userKey: 'key-admin-only' }),
        ...(perms.users ?? []).map((u) => grant('read', { type: 'user', userKey: `key-${u.accountId}` })),
        ...(perms.groups ?? []).map((name) => grant('read', { type: 'group', name })),
      ]);
    }
    if (path === '/wiki/rest/api/user' && dataCenter) {
      const userKey = url.searchParams.get('key') ?? '';
      if (!userKey.startsWith('key-')) return json(res, 404, { message: 'No user' });
      return json(res, 200, { type: 'known', username: userKey.slice(4), userKey });
    }
    const members = /^\/wiki\/rest\/api\/group\/([^/]+)\/member$/.exec(path);
    if (members) {
      const list = state.groups.get(decodeURIComponent(members[1] as string));
      if (!list) return json(res, 404, { message: 'No group' });
      const { slice, next } = paged(list, new URLSearchParams({ limit: String(limit) }));
      return json(res, 200, {
        results: slice.map((m) => ({ type: 'known', ...m })),
        start,
        limit,
        size: slice.length,
        _links: { base, ...(next ? { next } : {}) },
      });
    }
    return json(res, 404, { message: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/wiki`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  }) as FakeConfluence;
}
