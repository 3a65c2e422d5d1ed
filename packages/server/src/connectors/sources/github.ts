import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { retryAfterMs } from '../../outbound/outbound.ts';
import { getJson, nextLink } from './http.ts';
import { rateLimitedUntil } from './limits.ts';
import {
  type EventVerdict,
  type ExternalAccess,
  type ExternalGroup,
  type JsonValue,
  type LoadArgs,
  type PermissionEntry,
  RateLimitedError,
  type Source,
  type SourceBatch,
  type SourceDocument,
  type SourceDocumentFailure,
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
  /**
   * Largest share of the token's rate-limit window (5,000 requests an hour for a personal token) one run
   * spends; past it the run stops and resumes when the window resets, leaving the rest to other users
   * of the token.
   */
  request_budget_share: z.number().gt(0).max(1).default(0.8),
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
  /** `internal`: readable by the organisation's (enterprise's) members, listed with `private: true`. */
  visibility?: string;
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
/** Pull requests or issues per batch: about three requests each for a pull request. */
const ITEMS_PER_BATCH = 20;

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

/** A secondary limit that names no `retry-after`: "wait for at least one minute before retrying" (GitHub's rate-limit page). */
const SECONDARY_WAIT_MS = 60_000;
/** Quota of a personal access token when GitHub has not told its own yet. */
const DEFAULT_HOURLY_LIMIT = 5000;
const TRANSIENT_RETRIES = 2;

/**
 * GitHub's rate limits for one run (docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api):
 * the `x-ratelimit-*` headers of every answer are read; once `remaining` is 0 no request is sent before
 * `x-ratelimit-reset`; a run sends no request once the token has spent `request_budget_share` of the
 * window (by this run's count or by GitHub's, whichever is more), leaving the rest to the token's other
 * users; 403/429 refusals are told apart (primary limit, secondary limit, missing permission).
 */
class RateLimits {
  readonly #share: number;
  #limit: number | null = null;
  #remaining: number | null = null;
  /** Epoch ms at which the current window resets. */
  #reset: number | null = null;
  /** Requests this run sent in the current window. */
  #spent = 0;

  constructor(share: number) {
    this.#share = share;
  }

  /** Called before each request: refuses it while the token is limited or the run's budget is spent. */
  beforeRequest(now = Date.now()): void {
    this.reserve(1, now);
    this.#spent++;
  }

  /**
   * Called before an item that needs about `cost` requests (a pull request: three): when the window
   * cannot pay for it, the run stops before the item rather than part-way through it (whose requests
   * the next attempt would send again).
   */
  reserve(cost: number, now = Date.now()): void {
    if (this.#reset !== null && now >= this.#reset) {
      this.#spent = 0;
      this.#remaining = null;
      this.#reset = null;
    }
    if (this.#remaining !== null && this.#remaining < cost)
      throw rateLimitedUntil(
        'GitHub',
        this.#resumeAt(),
        'is rate limiting requests (its rate limit is exhausted until x-ratelimit-reset)',
      );
    const limit = this.#limit ?? DEFAULT_HOURLY_LIMIT;
    const budget = Math.max(1, Math.floor(this.#share * limit));
    // What the token spent in this window (this run, earlier attempts, other users of the token).
    const used = Math.max(this.#spent, this.#remaining === null ? 0 : limit - this.#remaining);
    if (used + cost > budget)
      throw rateLimitedUntil(
        'GitHub',
        this.#resumeAt() ?? new Date(now + 3_600_000),
        `request budget is spent (${budget} of the token's ${limit} requests per window: request_budget_share)`,
      );
  }

  /** Reads the rate-limit headers of an answer and turns a rate-limit refusal into its error. */
  async inspect(response: Response): Promise<SourceError | null> {
    const h = response.headers;
    const limit = Number(h.get('x-ratelimit-limit'));
    const remaining = h.get('x-ratelimit-remaining');
    const reset = Number(h.get('x-ratelimit-reset')) * 1000;
    if (limit > 0) this.#limit = limit;
    if (remaining !== null && /^\d+$/.test(remaining)) this.#remaining = Number(remaining);
    if (reset > 0) {
      // A later reset is a new window: what this run spent counts from there.
      if (this.#reset !== null && reset > this.#reset) this.#spent = 1;
      this.#reset = reset;
    }
    if (response.status !== 403 && response.status !== 429) return null;
    if (remaining === '0')
      return rateLimitedUntil(
        'GitHub',
        this.#resumeAt(),
        `is rate limiting requests (${response.status}: the rate limit is exhausted until x-ratelimit-reset)`,
      );
    const retryAfter = retryAfterMs(h.get('retry-after'));
    if (retryAfter !== null)
      return rateLimitedUntil(
        'GitHub',
        new Date(Date.now() + retryAfter),
        `is rate limiting requests (${response.status}: a secondary rate limit, retry-after)`,
      );
    const message = response.status === 403 ? await response.text().catch(() => '') : '';
    if (response.status === 429 || /rate limit|abuse/i.test(message))
      return rateLimitedUntil(
        'GitHub',
        new Date(Date.now() + SECONDARY_WAIT_MS),
        `is rate limiting requests (${response.status}: a secondary rate limit)`,
      );
    return new Forbidden();
  }

  #resumeAt(): Date | null {
    return this.#reset === null ? null : new Date(this.#reset + 1000);
  }
}
/**
 * Per-run state (rate limits, collaborators, trees) is keyed by the run's configuration object: one
 * per attempt or event delivery, shared by an attempt's `load` and its permission pass.
 */
const rateLimitsOf = new WeakMap<object, RateLimits>();

/** A 403 that is no rate limit: the token may not do this (the whole run, unless the caller knows better). */
class Forbidden extends SourceError {
  constructor() {
    super('auth', 'GitHub denied access (403): the token lacks a permission');
  }
}

/**
 * The collaborators of a private repository cannot be read ("Must have push access to view
 * repository collaborators": a read-only token). Its items cannot be given their audience, so they
 * become per-document errors; the other repositories are indexed.
 */
class CollaboratorsRefused extends SourceError {
  constructor(message: string) {
    super('auth', message);
  }
}

function limitsOf(args: Args): RateLimits {
  let limits = rateLimitsOf.get(args.config);
  if (!limits) {
    limits = new RateLimits(args.config.request_budget_share);
    rateLimitsOf.set(args.config, limits);
  }
  return limits;
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * A GET through GitHub's rate-limit rules. The outbound client does not retry here (it would resend
 * while rate limited, which GitHub warns can get an integration banned); network errors and 5xx are
 * retried here, twice, with backoff.
 */
async function get<T>(args: Args, url: string, nullStatuses: readonly number[] = []) {
  const limits = limitsOf(args);
  for (let attempt = 0; ; attempt++) {
    limits.beforeRequest();
    try {
      return await getJson<T>(args, url, {
        headers: headers(args),
        service: 'GitHub',
        inspect: (response) => limits.inspect(response),
        nullStatuses,
        outbound: { retries: 0 },
      });
    } catch (error) {
      const retry = error instanceof SourceError && error.kind === 'transient' && attempt < TRANSIENT_RETRIES;
      if (!retry || args.signal.aborted) throw error;
      await pause(500 * 2 ** attempt, args.signal);
    }
  }
}

const repoOf = (r: Repo): Repo => ({
  full_name: r.full_name,
  private: r.private,
  ...(r.visibility ? { visibility: r.visibility } : {}),
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
    // "List repositories for a user" lists public ones only; the token's own user lists its private
    // ones too through "List repositories for the authenticated user" (`type` and `affiliation`
    // cannot be combined there).
    url = (await isTokenUser(args))
      ? api(args, `/user/repos?affiliation=owner&per_page=${PER_PAGE}`)
      : api(args, `/users/${owner}/repos?type=owner&per_page=${PER_PAGE}`);
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

/** Whether the owner is the token's own user (`GET /user`; an app token, which has no user, is refused). */
async function isTokenUser(args: Args): Promise<boolean> {
  try {
    const me = await get<User>(args, api(args, '/user'));
    return me?.data.login?.toLowerCase() === args.config.repo_owner.toLowerCase();
  } catch (error) {
    if (error instanceof SourceError && error.kind === 'auth') return false;
    throw error;
  }
}

/**
 * Who may see a repository's documents (`sync` access only): everyone for public repositories, else
 * the repository's collaborators by login (matched against linked `github` identities). Read once per
 * repository and run.
 */
async function accessOf(args: Args, repo: Repo): Promise<ExternalAccess | undefined> {
  if (args.accessType !== 'sync') return undefined;
  if (!repo.private) return { is_public: true, user_emails: [], external_group_ids: [] };
  const cache = collaborators.get(args.config) ?? new Map<string, Promise<string[]>>();
  collaborators.set(args.config, cache);
  let logins = cache.get(repo.full_name);
  if (!logins) {
    logins = (async () => {
      const found: string[] = [];
      let url: string | null = api(args, `/repos/${repoPath(repo)}/collaborators?per_page=${PER_PAGE}`);
      while (url) {
        let page: { data: User[]; response: Response } | null;
        try {
          page = await get<User[]>(args, url);
        } catch (error) {
          if (!(error instanceof Forbidden)) throw error;
          throw new CollaboratorsRefused(
            `GitHub refused to list the collaborators of ${repo.full_name} (403): a sync pair's token needs push access to its private repositories`,
          );
        }
        if (!page) break;
        for (const user of page.data) found.push(user.login.toLowerCase());
        url = nextLink(page.response.headers.get('link'));
      }
      return found;
    })();
    // A failure is kept for the run (each item reports it without asking again), and handled by callers.
    logins.catch(() => {});
    cache.set(repo.full_name, logins);
  }
  // An internal repository is readable by every member of the organisation, and by its collaborators.
  const members = repo.visibility === 'internal' ? [membersGroup(args)] : [];
  return { is_public: false, user_emails: [], external_group_ids: members, user_ids: await logins };
}

/** The group of the owner organisation's members (internal repositories are theirs to read). */
const membersGroup = (args: Args) => `${args.config.repo_owner.toLowerCase()}/members`;

/**
 * The owner organisation's members (`GET /orgs/{org}/members`), the audience of its internal
 * repositories. Only members the token can see are listed (all of them for a member's token), so the
 * others fail closed; internal repositories are readable by the whole enterprise, which kas narrows
 * to this organisation. A user owner has no members.
 */
async function externalGroups(args: Args): Promise<ExternalGroup[]> {
  const owner = encodeURIComponent(args.config.repo_owner);
  let url: string | null = api(args, `/orgs/${owner}/members?per_page=${PER_PAGE}`);
  const logins: string[] = [];
  while (url) {
    let page: { data: User[]; response: Response } | null;
    try {
      page = await get<User[]>(args, url);
    } catch (error) {
      if (!(error instanceof Forbidden)) throw error;
      args.logger.warn(
        'GitHub refused to list the organisation members: internal repositories go to their collaborators only',
      );
      return [];
    }
    if (!page) return [];
    for (const user of page.data) logins.push(user.login.toLowerCase());
    url = nextLink(page.response.headers.get('link'));
  }
  return [{ group_id: membersGroup(args), member_emails: [], member_ids: logins }];
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

interface TreeEntry {
  path: string;
  type: string;
  sha: string;
}
interface Tree {
  tree: TreeEntry[];
  truncated?: boolean;
}

/**
 * Every blob under a tree (a branch name or a tree sha), paths prefixed. "Get a tree": a recursive
 * answer over 100,000 entries or 7 MB comes `truncated`; then the tree is read one level and each
 * subtree the same way. 409 is GitHub's answer for an empty repository: it has no files.
 */
async function blobsUnder(args: Args, repo: Repo, ref: string, prefix: string): Promise<TreeEntry[]> {
  const base = `/repos/${repoPath(repo)}/git/trees/${encodeURIComponent(ref)}`;
  const full = await get<Tree>(args, api(args, `${base}?recursive=1`), [409]);
  if (!full) return [];
  const withPrefix = (e: TreeEntry) => ({ ...e, path: `${prefix}${e.path}` });
  if (!full.data.truncated) return full.data.tree.filter((e) => e.type === 'blob').map(withPrefix);
  const level = await get<Tree>(args, api(args, base), [409]);
  const blobs: TreeEntry[] = [];
  for (const entry of level?.data.tree ?? []) {
    if (entry.type === 'blob') blobs.push(withPrefix(entry));
    else if (entry.type === 'tree')
      blobs.push(...(await blobsUnder(args, repo, entry.sha, `${prefix}${entry.path}/`)));
  }
  return blobs;
}

/** The Markdown files of a repository's default branch, read once per run. */
function markdownFiles(args: Args, repo: Repo): Promise<TreeEntry[]> {
  const cache = trees.get(args.config) ?? new Map<string, Promise<TreeEntry[]>>();
  trees.set(args.config, cache);
  let files = cache.get(repo.full_name);
  if (!files) {
    files = blobsUnder(args, repo, repo.default_branch, '').then((blobs) =>
      blobs.filter((e) => /\.(md|markdown)$/i.test(e.path)),
    );
    // A failed read is not kept: the next batch (or attempt) asks again.
    files.catch(() => cache.delete(repo.full_name));
    cache.set(repo.full_name, files);
  }
  return files;
}
const trees = new WeakMap<object, Map<string, Promise<TreeEntry[]>>>();

async function markdownBatch(
  args: Args,
  repo: Repo,
  offset: number,
): Promise<{ documents: SourceDocument[]; done: boolean }> {
  const files = await markdownFiles(args, repo);
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
  /** The listing page being worked through (read once however many batches it makes). */
  let listed = null as { url: string; page: { data: (Issue | Pull)[]; response: Response } | null } | null;
  while (true) {
    const repo = repos[cp.index] as Repo;
    let documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    let following: Checkpoint | null;
    /** Why the repository's items cannot be indexed (its collaborators unreadable); asked only when an item is. */
    const refusal = () =>
      accessOf(args, repo).then(
        () => null,
        (error) => {
          if (error instanceof CollaboratorsRefused) return error.message;
          throw error;
        },
      );
    const refused = cp.stage === 'files' ? await refusal() : null;
    if (cp.stage === 'files' && refused) {
      const files = await markdownFiles(args, repo);
      for (const file of files.slice(cp.offset, cp.offset + FILES_PER_BATCH)) {
        const link = `${repo.html_url}/blob/${repo.default_branch}/${file.path}`;
        failures.push({ document_id: link, link, message: refused });
      }
      following =
        cp.offset + FILES_PER_BATCH >= files.length
          ? advance()
          : { ...cp, offset: cp.offset + FILES_PER_BATCH };
    } else if (cp.stage === 'files') {
      const batch = await markdownBatch(args, repo, cp.offset);
      documents = batch.documents;
      following = batch.done ? advance() : { ...cp, offset: cp.offset + FILES_PER_BATCH };
    } else {
      const url = cp.next ?? firstUrl(args, repo, cp.stage, since);
      if (listed?.url !== url) listed = { url, page: await get<(Issue | Pull)[]>(args, url) };
      const { page } = listed;
      const items = page?.data ?? [];
      let reachedOlder = false;
      let at = cp.offset;
      // A batch is a part of a page (each item costs requests of its own): a run stopped by a rate
      // limit resumes after the last item indexed, not at the start of the page.
      let limited: unknown = null;
      for (; at < items.length && at < cp.offset + ITEMS_PER_BATCH; at++) {
        const item = items[at] as Issue | Pull;
        if (since && new Date(item.updated_at) < since) {
          reachedOlder = true;
          break;
        }
        if (cp.stage === 'issues' && (item as Issue).pull_request) continue;
        try {
          // A pull request costs three requests (comments, reviews, review comments), an issue one.
          limitsOf(args).reserve(cp.stage === 'prs' ? 3 : 1);
          const refused = await refusal();
          if (refused) failures.push({ document_id: item.html_url, link: item.html_url, message: refused });
          else if (cp.stage === 'prs') documents.push(await pullDocument(args, repo, item as Pull));
          else documents.push(await issueDocument(args, repo, item as Issue));
        } catch (error) {
          if (!(error instanceof RateLimitedError)) throw error;
          limited = error;
          break;
        }
      }
      if (limited) {
        // What was read before the limit is kept: the next attempt starts at the item that hit it.
        if (documents.length || failures.length)
          yield { documents, failures, checkpoint: { ...cp, next: url, offset: at } as unknown as JsonValue };
        throw limited;
      }
      if (!reachedOlder && at < items.length) following = { ...cp, next: url, offset: at };
      else {
        const next = page && !reachedOlder ? nextLink(page.response.headers.get('link')) : null;
        following = next ? { ...cp, next, offset: 0 } : advance();
      }
    }
    yield { documents, failures, checkpoint: following as unknown as JsonValue };
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

/** The ids of a repository's pull requests (when its issue listing, which includes them, is disabled). */
async function* pullIds(args: Args, repo: Repo): AsyncIterable<string[]> {
  let url: string | null = api(args, `/repos/${repoPath(repo)}/pulls?state=all&per_page=${PER_PAGE}`);
  while (url) {
    const page: { data: Pull[]; response: Response } | null = await get<Pull[]>(args, url);
    if (!page) return;
    yield page.data.map((pr) => pr.html_url);
    url = nextLink(page.response.headers.get('link'));
  }
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
      let first = true;
      while (url) {
        const page: { data: Issue[]; response: Response } | null = await get<Issue[]>(args, url);
        if (!page && first) {
          // Issues disabled (410 "Issues are disabled for this repo", or 404): the repository has no
          // issues, and its pull requests are listed on their own.
          if (include_prs) yield* pullIds(args, repo);
          break;
        }
        if (!page)
          throw new SourceError('not_found', `GitHub repository ${repo.full_name} could not be listed`);
        first = false;
        yield page.data
          .filter((item) => (item.pull_request ? include_prs : include_issues))
          .map((item) => item.html_url);
        url = nextLink(page.response.headers.get('link'));
      }
    }
    if (include_markdown)
      yield (await markdownFiles(args, repo)).map(
        (e) => `${repo.html_url}/blob/${repo.default_branch}/${e.path}`,
      );
  }
}

/**
 * Current access of every repository's documents (`sync` pairs, on every run): a repository made
 * private or public, or a collaborator added or removed, changes no item, so polls would not see it.
 * Read per repository (its visibility, and its collaborators when private), applied to every document
 * under it. Collaborators the token may not list give the repository's documents to no one.
 */
async function* permissions(args: Args): AsyncIterable<PermissionEntry[]> {
  for (const repo of await listRepos(args)) {
    let access: ExternalAccess;
    try {
      access = (await accessOf(args, repo)) ?? { is_public: false, user_emails: [], external_group_ids: [] };
    } catch (error) {
      if (!(error instanceof CollaboratorsRefused)) throw error;
      args.logger.warn(error.message);
      access = { is_public: false, user_emails: [], external_group_ids: [], user_ids: [] };
    }
    yield [{ document_id_prefix: `${repo.html_url}/`, access }];
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
  permissions,
  externalGroups,
  events: { verify, fetch: fetchRefs },
};
