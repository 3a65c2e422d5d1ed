import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { getJson, nextLink } from './http.ts';
import {
  type EventVerdict,
  type ExternalAccess,
  type JsonValue,
  type LoadArgs,
  type Source,
  type SourceBatch,
  type SourceDocument,
  SourceError,
  type SourceEvent,
  type SourceRunContext,
  validateWith,
} from './source.ts';

const GitHubConfig = z.object({
  base_url: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL (GitHub Enterprise: https://host/api/v3)' })
    .default('https://api.github.com'),
  repo_owner: z.string().trim().min(1, 'the user or organisation that owns the repositories'),
  /** Repositories of the owner (comma-separated or a list); absent: every repository of the owner. */
  repositories: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((v) => (Array.isArray(v) ? v : (v ?? '').split(',')).map((r) => r.trim()).filter(Boolean)),
  include_prs: z.boolean().default(true),
  include_issues: z.boolean().default(true),
  include_markdown: z.boolean().default(false),
});
export type GitHubConfig = z.infer<typeof GitHubConfig>;

const GitHubCredential = z.object({
  github_access_token: z.string().trim().min(1, 'a personal access token or app token'),
  /** The secret of the repository's webhook, for `input_type: event`. */
  github_webhook_secret: z.string().min(1).optional(),
});
export type GitHubCredential = z.infer<typeof GitHubCredential>;

interface Repo {
  full_name: string;
  private: boolean;
  default_branch: string;
  html_url: string;
}

type Stage = 'prs' | 'issues' | 'files';

interface Checkpoint {
  repos: Repo[];
  index: number;
  stage: Stage;
  next: string | null;
  offset: number;
}

interface User {
  login: string;
}
interface Issue {
  number: number;
  title: string;
  body: string | null;
  html_url: string;
  state: string;
  user: User | null;
  updated_at: string;
  comments: number;
  comments_url: string;
  labels?: ({ name?: string } | string)[];
  pull_request?: unknown;
}
interface Pull extends Omit<Issue, 'comments' | 'comments_url'> {
  merged_at: string | null;
  draft?: boolean;
}
interface Comment {
  body: string | null;
  html_url: string;
  user: User | null;
}

interface Review {
  body: string | null;
  state: string;
  html_url?: string;
  user: User | null;
}
interface ReviewComment extends Comment {
  path?: string;
}
const REVIEW_STATES: Record<string, string> = {
  APPROVED: 'approved',
  CHANGES_REQUESTED: 'requested changes',
  COMMENTED: 'commented',
  DISMISSED: 'reviewed (dismissed)',
};

type Args = SourceRunContext<GitHubConfig, GitHubCredential>;

const PER_PAGE = 100;
const FILES_PER_BATCH = 50;

function api(args: Args, path: string): string {
  return `${args.config.base_url.replace(/\/+$/, '')}${path}`;
}

function headers(args: Args): Record<string, string> {
  return {
    accept: 'application/vnd.github+json',
    authorization: `Bearer ${args.credential.github_access_token}`,
    'x-github-api-version': '2022-11-28',
  };
}

/** GitHub answers an exhausted rate limit with 403 and `x-ratelimit-remaining: 0`. */
const rateLimited = (response: Response) =>
  response.status === 403 && response.headers.get('x-ratelimit-remaining') === '0';

async function get<T>(args: Args, url: string) {
  const result = await getJson<T>(args, url, { headers: headers(args), service: 'GitHub', rateLimited });
  if (result && rateLimited(result.response))
    throw new SourceError('rate_limited', 'GitHub rate limit exhausted');
  return result;
}

const repoOf = (r: Repo): Repo => ({
  full_name: r.full_name,
  private: r.private,
  default_branch: r.default_branch,
  html_url: r.html_url,
});

async function listRepos(args: Args): Promise<Repo[]> {
  const { repo_owner, repositories } = args.config;
  const owner = encodeURIComponent(repo_owner);
  if (repositories.length) {
    const repos: Repo[] = [];
    for (const name of repositories) {
      const found = await get<Repo>(args, api(args, `/repos/${owner}/${encodeURIComponent(name)}`));
      if (!found) throw new SourceError('not_found', `GitHub repository ${repo_owner}/${name} not found`);
      repos.push(repoOf(found.data));
    }
    return repos;
  }
  let url: string | null = api(args, `/orgs/${owner}/repos?type=all&per_page=${PER_PAGE}`);
  let first = await get<Repo[]>(args, url);
  if (!first) {
    url = api(args, `/users/${owner}/repos?type=owner&per_page=${PER_PAGE}`);
    first = await get<Repo[]>(args, url);
  }
  if (!first) throw new SourceError('not_found', `GitHub user or organisation ${repo_owner} not found`);
  const repos = first.data.map(repoOf);
  url = nextLink(first.response.headers.get('link'));
  while (url) {
    const page = await get<Repo[]>(args, url);
    if (!page) break;
    repos.push(...page.data.map(repoOf));
    url = nextLink(page.response.headers.get('link'));
  }
  return repos;
}

/**
 * Who may see a repository's documents (`sync` access only): everyone for public repositories, else
 * the repository's collaborators by login (matched against linked `github` identities). Read once per
 * repository and run.
 */
async function accessOf(args: Args, repo: Repo): Promise<ExternalAccess | undefined> {
  if (args.accessType !== 'sync') return undefined;
  if (!repo.private) return { is_public: true, user_emails: [], external_group_ids: [] };
  const cache = collaborators.get(args) ?? new Map<string, Promise<string[]>>();
  collaborators.set(args, cache);
  let logins = cache.get(repo.full_name);
  if (!logins) {
    logins = (async () => {
      const found: string[] = [];
      let url: string | null = api(args, `/repos/${repoPath(repo)}/collaborators?per_page=${PER_PAGE}`);
      while (url) {
        const page: { data: User[]; response: Response } | null = await get<User[]>(args, url);
        if (!page) break;
        for (const user of page.data) found.push(user.login.toLowerCase());
        url = nextLink(page.response.headers.get('link'));
      }
      return found;
    })();
    cache.set(repo.full_name, logins);
  }
  return { is_public: false, user_emails: [], external_group_ids: [], user_ids: await logins };
}
const collaborators = new WeakMap<object, Map<string, Promise<string[]>>>();

const labelsOf = (issue: Issue | Pull) =>
  (issue.labels ?? []).map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter(Boolean);

/** Every item of a paginated listing (`Link: rel="next"`). */
async function listAll<T>(args: Args, first: string): Promise<T[]> {
  const items: T[] = [];
  let url: string | null = first;
  while (url) {
    const page: { data: T[]; response: Response } | null = await get<T[]>(args, url);
    if (!page) break;
    items.push(...page.data);
    url = nextLink(page.response.headers.get('link'));
  }
  return items;
}

/**
 * A pull request with its conversation: comments, reviews' bodies (approve / request changes /
 * comment) and review comments on the diff (with the file they concern), each a section linking to it.
 */
async function pullDocument(args: Args, repo: Repo, pr: Pull): Promise<SourceDocument> {
  const base = `/repos/${repoPath(repo)}`;
  const sections = [{ text: pr.body ?? '', link: pr.html_url }];
  const comments = await listAll<Comment>(
    args,
    api(args, `${base}/issues/${pr.number}/comments?per_page=${PER_PAGE}`),
  );
  for (const comment of comments)
    sections.push({
      text: `${comment.user?.login ?? 'someone'}: ${comment.body ?? ''}`,
      link: comment.html_url,
    });
  const reviews = await listAll<Review>(
    args,
    api(args, `${base}/pulls/${pr.number}/reviews?per_page=${PER_PAGE}`),
  );
  for (const review of reviews) {
    if (!review.body?.trim()) continue;
    const verdict = REVIEW_STATES[review.state] ?? 'reviewed';
    sections.push({
      text: `${review.user?.login ?? 'someone'} ${verdict}: ${review.body}`,
      link: review.html_url ?? pr.html_url,
    });
  }
  const reviewComments = await listAll<ReviewComment>(
    args,
    api(args, `${base}/pulls/${pr.number}/comments?per_page=${PER_PAGE}`),
  );
  for (const comment of reviewComments)
    sections.push({
      text: `${comment.user?.login ?? 'someone'} on ${comment.path ?? 'the diff'}: ${comment.body ?? ''}`,
      link: comment.html_url,
    });
  return {
    id: pr.html_url,
    semantic_identifier: `${repo.full_name}#${pr.number}: ${pr.title}`,
    title: pr.title,
    sections,
    metadata: {
      object_type: 'PullRequest',
      repo: repo.full_name,
      state: pr.merged_at ? 'merged' : pr.state,
      labels: labelsOf(pr),
    },
    doc_updated_at: new Date(pr.updated_at),
    primary_owners: pr.user ? [{ display_name: pr.user.login }] : [],
    external_access: await accessOf(args, repo),
  };
}

async function issueDocument(args: Args, repo: Repo, issue: Issue): Promise<SourceDocument> {
  const sections = [{ text: issue.body ?? '', link: issue.html_url }];
  if (issue.comments > 0) {
    let url: string | null = `${issue.comments_url}?per_page=${PER_PAGE}`;
    while (url) {
      const page: { data: Comment[]; response: Response } | null = await get<Comment[]>(args, url);
      if (!page) break;
      for (const comment of page.data)
        sections.push({
          text: `${comment.user?.login ?? 'someone'}: ${comment.body ?? ''}`,
          link: comment.html_url,
        });
      url = nextLink(page.response.headers.get('link'));
    }
  }
  return {
    id: issue.html_url,
    semantic_identifier: `${repo.full_name}#${issue.number}: ${issue.title}`,
    title: issue.title,
    sections,
    metadata: { object_type: 'Issue', repo: repo.full_name, state: issue.state, labels: labelsOf(issue) },
    doc_updated_at: new Date(issue.updated_at),
    primary_owners: issue.user ? [{ display_name: issue.user.login }] : [],
    external_access: await accessOf(args, repo),
  };
}

function stagesOf(config: GitHubConfig): Stage[] {
  return [
    ...(config.include_prs ? (['prs'] as const) : []),
    ...(config.include_issues ? (['issues'] as const) : []),
    ...(config.include_markdown ? (['files'] as const) : []),
  ];
}

const repoPath = (repo: Repo) => repo.full_name.split('/').map(encodeURIComponent).join('/');

function firstUrl(args: Args, repo: Repo, stage: Stage, since: Date | null): string {
  const base = `/repos/${repoPath(repo)}`;
  if (stage === 'prs')
    return api(args, `${base}/pulls?state=all&sort=updated&direction=desc&per_page=${PER_PAGE}`);
  if (stage === 'issues')
    return api(
      args,
      `${base}/issues?state=all&sort=updated&direction=desc&per_page=${PER_PAGE}${since ? `&since=${since.toISOString()}` : ''}`,
    );
  return api(args, `${base}/git/trees/${encodeURIComponent(repo.default_branch)}?recursive=1`);
}

async function markdownBatch(
  args: Args,
  repo: Repo,
  offset: number,
): Promise<{ documents: SourceDocument[]; done: boolean }> {
  const tree = await get<{ tree: { path: string; type: string; sha: string }[] }>(
    args,
    firstUrl(args, repo, 'files', null),
  );
  const files = (tree?.data.tree ?? []).filter((e) => e.type === 'blob' && /\.(md|markdown)$/i.test(e.path));
  const documents: SourceDocument[] = [];
  for (const file of files.slice(offset, offset + FILES_PER_BATCH)) {
    const blob = await get<{ content: string; encoding: string }>(
      args,
      api(args, `/repos/${repoPath(repo)}/git/blobs/${file.sha}`),
    );
    if (!blob) continue;
    const text =
      blob.data.encoding === 'base64'
        ? Buffer.from(blob.data.content, 'base64').toString('utf8')
        : blob.data.content;
    const link = `${repo.html_url}/blob/${repo.default_branch}/${file.path}`;
    documents.push({
      id: link,
      semantic_identifier: `${repo.full_name}/${file.path}`,
      title: file.path.split('/').pop() ?? file.path,
      sections: [{ text, link }],
      metadata: { object_type: 'File', repo: repo.full_name, path: file.path },
      external_access: await accessOf(args, repo),
    });
  }
  return { documents, done: offset + FILES_PER_BATCH >= files.length };
}

async function* load(args: LoadArgs<GitHubConfig, GitHubCredential>): AsyncIterable<SourceBatch> {
  const stages = stagesOf(args.config);
  const since = args.window.start;
  const saved = args.checkpoint as unknown as Checkpoint | null;
  const repos = saved?.repos ?? (await listRepos(args));
  if (!stages.length) return;
  let cp: Checkpoint = saved ?? { repos, index: 0, stage: stages[0] as Stage, next: null, offset: 0 };
  const advance = (): Checkpoint | null => {
    const at = stages.indexOf(cp.stage);
    if (at + 1 < stages.length) return { ...cp, stage: stages[at + 1] as Stage, next: null, offset: 0 };
    if (cp.index + 1 < repos.length)
      return { ...cp, index: cp.index + 1, stage: stages[0] as Stage, next: null, offset: 0 };
    return null;
  };
  if (!repos.length) return;
  while (true) {
    const repo = repos[cp.index] as Repo;
    let documents: SourceDocument[] = [];
    let following: Checkpoint | null;
    if (cp.stage === 'files') {
      const batch = await markdownBatch(args, repo, cp.offset);
      documents = batch.documents;
      following = batch.done ? advance() : { ...cp, offset: cp.offset + FILES_PER_BATCH };
    } else {
      const page = await get<(Issue | Pull)[]>(args, cp.next ?? firstUrl(args, repo, cp.stage, since));
      let reachedOlder = false;
      for (const item of page?.data ?? []) {
        if (since && new Date(item.updated_at) < since) {
          reachedOlder = true;
          break;
        }
        if (cp.stage === 'prs') documents.push(await pullDocument(args, repo, item as Pull));
        else if (!(item as Issue).pull_request)
          documents.push(await issueDocument(args, repo, item as Issue));
      }
      const next = page && !reachedOlder ? nextLink(page.response.headers.get('link')) : null;
      following = next ? { ...cp, next } : advance();
    }
    yield { documents, checkpoint: following as unknown as JsonValue };
    if (!following) return;
    cp = following;
  }
}

/** The documents one webhook delivery affects, by kind. */
type GitHubRef = { kind: 'issue' | 'pull'; repo: string; number: number };

function verify(event: SourceEvent<GitHubCredential>): EventVerdict {
  const secret = event.credential.github_webhook_secret;
  if (!secret) return { ok: false, reason: 'the credential has no github_webhook_secret' };
  const signature = event.headers['x-hub-signature-256'] ?? '';
  const expected = `sha256=${createHmac('sha256', secret).update(event.rawBody).digest('hex')}`;
  const a = Buffer.from(signature);
  const b = Buffer.from(expected);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { ok: false, reason: 'bad signature' };
  let payload: {
    repository?: { full_name?: string };
    issue?: { number?: number; pull_request?: unknown };
    pull_request?: { number?: number };
  };
  try {
    payload = JSON.parse(event.rawBody);
  } catch {
    return { ok: true, refs: [] };
  }
  const repo = payload.repository?.full_name;
  const refs: GitHubRef[] = [];
  if (repo && typeof payload.pull_request?.number === 'number')
    refs.push({ kind: 'pull', repo, number: payload.pull_request.number });
  else if (repo && typeof payload.issue?.number === 'number')
    refs.push({ kind: payload.issue.pull_request ? 'pull' : 'issue', repo, number: payload.issue.number });
  // The delivery's identity is its signed body: `X-GitHub-Delivery` is not signed, so a replay under a
  // new one would be queued again. GitHub's own redelivery sends the same body, and distinct events
  // differ in their body (ids, timestamps).
  const deliveryId = `sha256:${createHash('sha256').update(event.rawBody).digest('hex')}`;
  return { ok: true, refs: refs as unknown as JsonValue[], deliveryId };
}

async function fetchRefs(
  args: SourceRunContext<GitHubConfig, GitHubCredential>,
  refs: JsonValue[],
): Promise<{ documents: SourceDocument[]; deleted: string[] }> {
  const documents: SourceDocument[] = [];
  const deleted: string[] = [];
  const owner = args.config.repo_owner.toLowerCase();
  const wanted = new Set(args.config.repositories.map((r) => r.toLowerCase()));
  for (const raw of refs as unknown as GitHubRef[]) {
    const [refOwner, name] = raw.repo.split('/');
    if (refOwner?.toLowerCase() !== owner || (wanted.size && !wanted.has((name ?? '').toLowerCase())))
      continue;
    if (raw.kind === 'pull' && !args.config.include_prs) continue;
    if (raw.kind === 'issue' && !args.config.include_issues) continue;
    const found = await get<Repo>(args, api(args, `/repos/${raw.repo}`));
    if (!found) continue;
    const repo = repoOf(found.data);
    const path = raw.kind === 'pull' ? 'pulls' : 'issues';
    const item = await get<Issue & Pull>(args, api(args, `/repos/${repoPath(repo)}/${path}/${raw.number}`));
    if (!item) {
      deleted.push(`${repo.html_url}/${raw.kind === 'pull' ? 'pull' : 'issues'}/${raw.number}`);
      continue;
    }
    documents.push(
      raw.kind === 'pull'
        ? await pullDocument(args, repo, item.data)
        : await issueDocument(args, repo, item.data),
    );
  }
  return { documents, deleted };
}

/** Every document id the repositories still have (for `prune_freq`): one pass over the issue listing (which includes pull requests) and the trees. */
async function* listIds(args: Args): AsyncIterable<string[]> {
  const { include_prs, include_issues, include_markdown } = args.config;
  for (const repo of await listRepos(args)) {
    if (include_prs || include_issues) {
      let url: string | null = api(
        args,
        `/repos/${repoPath(repo)}/issues?state=all&sort=created&direction=asc&per_page=${PER_PAGE}`,
      );
      while (url) {
        const page: { data: Issue[]; response: Response } | null = await get<Issue[]>(args, url);
        if (!page)
          throw new SourceError('not_found', `GitHub repository ${repo.full_name} could not be listed`);
        yield page.data
          .filter((item) => (item.pull_request ? include_prs : include_issues))
          .map((item) => item.html_url);
        url = nextLink(page.response.headers.get('link'));
      }
    }
    if (include_markdown) {
      const tree = await get<{ tree: { path: string; type: string }[] }>(
        args,
        firstUrl(args, repo, 'files', null),
      );
      if (!tree)
        throw new SourceError('not_found', `GitHub repository ${repo.full_name} has no readable tree`);
      yield tree.data.tree
        .filter((e) => e.type === 'blob' && /\.(md|markdown)$/i.test(e.path))
        .map((e) => `${repo.html_url}/blob/${repo.default_branch}/${e.path}`);
    }
  }
}

/** GitHub: pull requests with comments and reviews, issues with their comments and optionally Markdown files of an owner's repositories. */
export const githubSource: Source<GitHubConfig, GitHubCredential> = {
  name: 'github',
  displayName: 'GitHub',
  needsCredential: true,
  inputTypes: ['poll', 'load_state', 'event'],
  validateConfig: (raw) => validateWith(GitHubConfig, raw),
  validateCredential: (raw) => validateWith(GitHubCredential, raw),
  secretTargets: (config) => [{ key: 'connector_specific_config.base_url', url: config.base_url }],
  load,
  listIds,
  events: { verify, fetch: fetchRefs },
};
