import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local GitHub REST API (the subset the github connector calls): repositories of an org or a user,
 * pull requests with reviews and review comments, issues (pull requests included, as GitHub lists them)
 * with comments, git trees and
 * blobs; `Link` pagination, bearer tokens (401 "Bad credentials"), 429 with Retry-After, 410 for
 * deleted issues. Served at the root and under `/api/v3` (GitHub Enterprise).
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
  /** Requests received: path and query (`/api/v3` removed). */
  requests: string[];
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
    requests: [] as string[],
    delayMs: 0,
  };
  let base = '';
  const repoJson = (r: FakeRepo) => ({
    id: gh.repos.indexOf(r) + 1,
    name: r.name,
    full_name: `${gh.owner}/${r.name}`,
    private: r.private,
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
    let m: RegExpExecArray | null;
    m = /^\/(orgs|users)\/([^/]+)\/repos$/.exec(path);
    if (m) {
      const wanted = m[1] === 'orgs' ? 'org' : 'user';
      if (m[2] !== gh.owner || wanted !== gh.ownerType) return send(res, 404, { message: 'Not Found' });
      return paged(req, res, gh.repos.map(repoJson));
    }
    m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    const repo = m && m[1] === gh.owner ? gh.repos.find((r) => r.name === m?.[2]) : undefined;
    if (!m || !repo) return send(res, 404, { message: 'Not Found' });
    const rest = m[3] ?? '';
    const byUpdate = (a: FakeIssue, b: FakeIssue) => b.updated_at.localeCompare(a.updated_at);
    if (rest === '') return send(res, 200, repoJson(repo));
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
      if (m[1] !== repo.default_branch) return send(res, 404, { message: 'Not Found' });
      return send(res, 200, {
        truncated: false,
        tree: [...repo.files.entries()].map(([p, content]) => ({
          path: p,
          type: 'blob',
          sha: createHash('sha1').update(content).digest('hex'),
        })),
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
