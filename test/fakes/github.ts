import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local GitHub REST API (the subset the github connector calls): repositories of an org or a user,
 * pull requests with reviews and review comments, issues (pull requests included, as GitHub lists them)
 * with comments, git trees and
 * blobs; `Link` pagination, bearer tokens (401 "Bad credentials"), 429 with Retry-After, 410 for
 * deleted issues. Served at the root and under `/api/v3` (GitHub Enterprise).
 *
 * What GitHub documents and the fake does too:
 * - the primary rate limit (docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api):
 *   `x-ratelimit-limit/remaining/used/reset/resource` on every answer; once spent, 403 (or 429) with
 *   `x-ratelimit-remaining: 0` and no `retry-after` until the window resets (`quota`, window shortened
 *   at will);
 * - secondary rate limits (same page): 403 or 429 with a message, with or without `retry-after` (`secondary`);
 * - "Get a tree": 409 "Git Repository is empty." for an empty repository, and `truncated: true` with a
 *   partial list when a recursive tree is over the limit (100,000 entries; `treeLimit` here); subtrees
 *   are read by their sha;
 * - "List repositories for a user" lists public repositories only; "List repositories for the
 *   authenticated user" (`/user/repos`) lists the token's user's private ones too;
 * - a repository with issues disabled answers its issue listing with 410 "Issues are disabled for this repo".
 */
export interface FakeComment {
  id: number;
  user: string;
  body: string;
}
export interface FakeIssue {
  number: number;
  title: string;
  body: string;
  user: string;
  state: 'open' | 'closed';
  updated_at: string;
  is_pull?: boolean;
  merged?: boolean;
  deleted?: boolean;
  comments: FakeComment[];
  /** Pull requests: reviews (`/pulls/N/reviews`) and review comments on the diff (`/pulls/N/comments`). */
  reviews?: { id: number; user: string; body: string; state: string }[];
  review_comments?: { id: number; user: string; body: string; path: string }[];
}
export interface FakeRepo {
  name: string;
  private: boolean;
  default_branch: string;
  issues: FakeIssue[];
  /** Markdown and other files of the default branch, by path. */
  files: Map<string, string>;
  /** Logins of the repository's collaborators. */
  collaborators: string[];
  /** No commit yet: its trees answer 409. */
  empty?: boolean;
  /** `internal`: readable by the members of the organisation (its enterprise), listed with `private: true`. */
  visibility?: 'internal';
  /** Issues disabled (`has_issues: false`): the issue listing answers 410. */
  has_issues?: boolean;
  /** The token has no push access: listing collaborators answers 403 ("List repository collaborators"). */
  collaboratorsForbidden?: boolean;
}
/** One request as received: method, path (an Enterprise `/api/v3` prefix removed) and query pairs. */
export interface FakeGitHubCall {
  method: string;
  path: string;
  query: [string, string][];
}

export interface FakeGitHub {
  url: string;
  owner: string;
  ownerType: 'org' | 'user';
  token: string;
  repos: FakeRepo[];
  /** Largest page the API answers, whatever `per_page` asks. */
  pageSize: number;
  /** The next N requests answer 429 with this Retry-After (seconds). */
  rateLimit: { remaining: number; retryAfter: number };
  /** The primary limit: `limit` requests per window of `windowMs`; once spent, `status` with `remaining: 0`. */
  quota: {
    limit: number;
    windowMs: number;
    status: 403 | 429;
    used: number;
    resetAt: number;
    refused?: number;
  };
  /** The next `remaining` requests hit a secondary limit (`retryAfter` null: no header, as GitHub may send). */
  secondary: { remaining: number; retryAfter: number | null; status: 403 | 429 };
  /** Most entries a recursive tree lists before it is `truncated`. */
  treeLimit: number;
  /** The login the token belongs to (`GET /user`). */
  tokenUser: string;
  /** Logins of the organisation's members ("List organization members", `/orgs/{org}/members`). */
  members: string[];
  /** Requests received: path and query (`/api/v3` removed). */
  requests: string[];
  /** Every request since the fake started (never cleared by tests): for the conformance check. */
  calls: FakeGitHubCall[];
  /** Every answer waits this long (a slow source). */
  delayMs: number;
  close(): Promise<void>;
}

export function fakeRepo(name: string, options: Partial<FakeRepo> = {}): FakeRepo {
  return {
    name,
    private: false,
    default_branch: 'main',
    issues: [],
    files: new Map(),
    collaborators: [],
    ...options,
  };
}

export async function startFakeGitHub(owner = 'acme'): Promise<FakeGitHub> {
  const gh = {
    owner,
    ownerType: 'org' as 'org' | 'user',
    token: 'ghp_good',
    repos: [] as FakeRepo[],
    pageSize: 100,
    rateLimit: { remaining: 0, retryAfter: 1 },
    quota: { limit: 5000, windowMs: 3_600_000, status: 403 as 403 | 429, used: 0, resetAt: 0, refused: 0 },
    secondary: { remaining: 0, retryAfter: null as number | null, status: 403 as 403 | 429 },
    treeLimit: 100_000,
    tokenUser: 'octocat',
    members: [] as string[],
    requests: [] as string[],
    calls: [] as FakeGitHubCall[],
    delayMs: 0,
  };
  let base = '';
  const repoJson = (r: FakeRepo) => ({
    id: gh.repos.indexOf(r) + 1,
    name: r.name,
    full_name: `${gh.owner}/${r.name}`,
    // An internal repository is private to outsiders: GitHub sends `private: true` with it.
    private: r.private || r.visibility === 'internal',
    visibility: r.visibility ?? (r.private ? 'private' : 'public'),
    default_branch: r.default_branch,
    html_url: `${base}/web/${gh.owner}/${r.name}`,
  });
  const issueJson = (r: FakeRepo, i: FakeIssue) => {
    const web = `${base}/web/${gh.owner}/${r.name}/${i.is_pull ? 'pull' : 'issues'}/${i.number}`;
    return {
      number: i.number,
      title: i.title,
      body: i.body,
      state: i.state,
      html_url: web,
      user: { login: i.user },
      updated_at: i.updated_at,
      labels: [{ name: 'bug' }],
      comments: i.comments.length,
      comments_url: `${base}/repos/${gh.owner}/${r.name}/issues/${i.number}/comments`,
      ...(i.is_pull ? { merged_at: i.merged ? i.updated_at : null, pull_request: { url: web } } : {}),
    };
  };
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.end(JSON.stringify(body));
  };
  const paged = (req: IncomingMessage, res: ServerResponse, items: unknown[]) => {
    const url = new URL(req.url ?? '/', base);
    const perPage = Math.min(gh.pageSize, Number(url.searchParams.get('per_page') ?? 30));
    const page = Number(url.searchParams.get('page') ?? 1);
    const slice = items.slice((page - 1) * perPage, page * perPage);
    const links: string[] = [];
    if (page * perPage < items.length) {
      url.searchParams.set('page', String(page + 1));
      links.push(`<${url.href}>; rel="next"`);
      url.searchParams.set('page', String(Math.ceil(items.length / perPage)));
      links.push(`<${url.href}>; rel="last"`);
    }
    send(res, 200, slice, links.length ? { link: links.join(', ') } : {});
  };
  const server: Server = createServer((req, res) => {
    if (gh.delayMs > 0) setTimeout(() => handle(req, res), gh.delayMs);
    else handle(req, res);
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', base);
    const path = url.pathname.replace(/^\/api\/v3/, '');
    gh.requests.push(path + url.search);
    gh.calls.push({ method: req.method ?? 'GET', path, query: [...url.searchParams] });
    if (gh.rateLimit.remaining > 0) {
      gh.rateLimit.remaining--;
      return send(
        res,
        429,
        { message: 'API rate limit exceeded' },
        { 'retry-after': String(gh.rateLimit.retryAfter) },
      );
    }
    if (req.headers.authorization !== `Bearer ${gh.token}`)
      return send(res, 401, {
        message: 'Bad credentials',
        documentation_url: 'https://docs.github.com/rest',
      });
    const now = Date.now();
    if (now >= gh.quota.resetAt) {
      gh.quota.used = 0;
      gh.quota.resetAt = now + gh.quota.windowMs;
    }
    const limited = gh.quota.used >= gh.quota.limit;
    if (!limited) gh.quota.used++;
    res.setHeader('x-ratelimit-limit', String(gh.quota.limit));
    res.setHeader('x-ratelimit-remaining', String(gh.quota.limit - gh.quota.used));
    res.setHeader('x-ratelimit-used', String(gh.quota.used));
    res.setHeader('x-ratelimit-reset', String(Math.ceil(gh.quota.resetAt / 1000)));
    res.setHeader('x-ratelimit-resource', 'core');
    if (limited) gh.quota.refused = (gh.quota.refused ?? 0) + 1;
    if (limited)
      return send(res, gh.quota.status, {
        message: `API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.`,
        documentation_url:
          'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit',
      });
    if (gh.secondary.remaining > 0) {
      gh.secondary.remaining--;
      return send(
        res,
        gh.secondary.status,
        {
          message:
            'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
          documentation_url:
            'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
        },
        gh.secondary.retryAfter === null ? {} : { 'retry-after': String(gh.secondary.retryAfter) },
      );
    }
    let m: RegExpExecArray | null;
    if (path === '/user') return send(res, 200, { login: gh.tokenUser, type: 'User' });
    if (path === '/user/repos') {
      // The token user's own repositories, private ones included (affiliation=owner).
      const own = gh.ownerType === 'user' && gh.owner === gh.tokenUser ? gh.repos : [];
      return paged(req, res, own.map(repoJson));
    }
    m = /^\/orgs\/([^/]+)\/members$/.exec(path);
    if (m) {
      if (m[1] !== gh.owner || gh.ownerType !== 'org') return send(res, 404, { message: 'Not Found' });
      return paged(
        req,
        res,
        gh.members.map((login) => ({ login, type: 'User' })),
      );
    }
    m = /^\/(orgs|users)\/([^/]+)\/repos$/.exec(path);
    if (m) {
      const wanted = m[1] === 'orgs' ? 'org' : 'user';
      if (m[2] !== gh.owner || wanted !== gh.ownerType) return send(res, 404, { message: 'Not Found' });
      // "List repositories for a user": public repositories only.
      const listed = wanted === 'user' ? gh.repos.filter((r) => !r.private) : gh.repos;
      return paged(req, res, listed.map(repoJson));
    }
    m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    const repo = m && m[1] === gh.owner ? gh.repos.find((r) => r.name === m?.[2]) : undefined;
    if (!m || !repo) return send(res, 404, { message: 'Not Found' });
    const rest = m[3] ?? '';
    const byUpdate = (a: FakeIssue, b: FakeIssue) => b.updated_at.localeCompare(a.updated_at);
    if (rest === '') return send(res, 200, repoJson(repo));
    if (rest === '/collaborators' && repo.collaboratorsForbidden)
      return send(res, 403, {
        message: 'Must have push access to view repository collaborators.',
        documentation_url:
          'https://docs.github.com/rest/collaborators/collaborators#list-repository-collaborators',
      });
    if (rest === '/collaborators')
      return paged(
        req,
        res,
        repo.collaborators.map((login) => ({ login, permissions: { pull: true } })),
      );
    if (rest === '/pulls')
      return paged(
        req,
        res,
        repo.issues
          .filter((i) => i.is_pull && !i.deleted)
          .sort(byUpdate)
          .map((i) => issueJson(repo, i)),
      );
    if (rest === '/issues') {
      if (repo.has_issues === false) return send(res, 410, { message: 'Issues are disabled for this repo' });
      const since = url.searchParams.get('since');
      return paged(
        req,
        res,
        repo.issues
          .filter((i) => !i.deleted && (!since || i.updated_at >= since))
          .sort(byUpdate)
          .map((i) => issueJson(repo, i)),
      );
    }
    m = /^\/(pulls|issues)\/(\d+)(\/comments|\/reviews)?$/.exec(rest);
    if (m) {
      const issue = repo.issues.find((i) => i.number === Number(m?.[2]));
      if (!issue || (m[1] === 'pulls' && !issue.is_pull)) return send(res, 404, { message: 'Not Found' });
      if (issue.deleted) return send(res, 410, { message: 'This issue was deleted' });
      const pullWeb = `${base}/web/${gh.owner}/${repo.name}/pull/${issue.number}`;
      if (m[1] === 'pulls' && m[3] === '/reviews')
        return paged(
          req,
          res,
          (issue.reviews ?? []).map((r) => ({
            id: r.id,
            body: r.body,
            state: r.state,
            user: { login: r.user },
            html_url: `${pullWeb}#pullrequestreview-${r.id}`,
          })),
        );
      if (m[1] === 'pulls' && m[3] === '/comments')
        return paged(
          req,
          res,
          (issue.review_comments ?? []).map((c) => ({
            id: c.id,
            body: c.body,
            path: c.path,
            user: { login: c.user },
            html_url: `${pullWeb}#discussion_r${c.id}`,
          })),
        );
      if (m[3] === '/reviews') return send(res, 404, { message: 'Not Found' });
      if (m[3])
        return paged(
          req,
          res,
          issue.comments.map((c) => ({
            id: c.id,
            body: c.body,
            user: { login: c.user },
            html_url: `${base}/web/${gh.owner}/${repo.name}/issues/${issue.number}#issuecomment-${c.id}`,
          })),
        );
      return send(res, 200, issueJson(repo, issue));
    }
    m = /^\/git\/trees\/([^/]+)$/.exec(rest);
    if (m) {
      if (repo.empty) return send(res, 409, { message: 'Git Repository is empty.' });
      const ref = decodeURIComponent(m[1] as string);
      const dir = ref === repo.default_branch ? '' : [...dirsOf(repo)].find((d) => treeSha(d) === ref);
      if (dir === undefined) return send(res, 404, { message: 'Not Found' });
      const recursive = url.searchParams.has('recursive');
      const entries = treeEntries(repo, dir, recursive);
      const truncated = recursive && entries.length > gh.treeLimit;
      return send(res, 200, {
        sha: treeSha(dir),
        truncated,
        tree: truncated ? entries.slice(0, gh.treeLimit) : entries,
      });
    }
    m = /^\/git\/blobs\/([0-9a-f]+)$/.exec(rest);
    if (m) {
      const content = [...repo.files.values()].find(
        (c) => createHash('sha1').update(c).digest('hex') === m?.[1],
      );
      if (content === undefined) return send(res, 404, { message: 'Not Found' });
      return send(res, 200, { content: Buffer.from(content).toString('base64'), encoding: 'base64' });
    }
    send(res, 404, { message: 'Not Found' });
  };
  const treeSha = (dir: string) => createHash('sha1').update(`tree:${dir}`).digest('hex');
  /** Every directory of the repository's files ('' is the root; others end without a slash). */
  const dirsOf = (repo: FakeRepo) => {
    const dirs = new Set<string>(['']);
    for (const p of repo.files.keys()) {
      const parts = p.split('/');
      for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
    }
    return dirs;
  };
  /** A directory's entries, paths relative to it: one level, or (recursive) every file and subdirectory below. */
  const treeEntries = (repo: FakeRepo, dir: string, recursive: boolean) => {
    const prefix = dir ? `${dir}/` : '';
    const entries: { path: string; type: string; sha: string }[] = [];
    for (const d of dirsOf(repo)) {
      if (d === '' || d === dir || !d.startsWith(prefix)) continue;
      const rel = d.slice(prefix.length);
      if (recursive || !rel.includes('/')) entries.push({ path: rel, type: 'tree', sha: treeSha(d) });
    }
    for (const [p, content] of repo.files) {
      if (!p.startsWith(prefix)) continue;
      const rel = p.slice(prefix.length);
      if (recursive || !rel.includes('/'))
        entries.push({ path: rel, type: 'blob', sha: createHash('sha1').update(content).digest('hex') });
    }
    return entries.sort((a, b) => a.path.localeCompare(b.path));
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  return Object.assign(gh, {
    url: base,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  }) as FakeGitHub;
}
