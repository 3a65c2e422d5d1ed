import { z } from 'zod';
import { kindOf } from '../../files/files.parse.ts';
import { OutboundError } from '../../outbound/outbound.ts';
import { getJson, type RestContext, sourceRequest } from './rest.ts';
import {
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
  type SourceRunContext,
  unreadableReason,
  validateWith,
} from './source.ts';

const ConfluenceConfig = z.object({
  wiki_base: z
    .string({ error: 'required: the wiki address, e.g. https://acme.atlassian.net/wiki' })
    .min(1)
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }))
    .transform((v) => v.replace(/\/+$/, '')),
  space: z
    .string({ error: 'required: the space key, e.g. ENG' })
    .trim()
    .regex(/^~?[A-Za-z0-9_.-]+$/, 'must be a space key (letters, digits, _ . -)'),
  page_id: z
    .union([z.string(), z.number()])
    .nullish()
    .transform((v) => (v === null || v === undefined || v === '' ? null : String(v)))
    .pipe(z.string().regex(/^\d+$/, 'must be a numeric page id').nullable()),
  index_attachments: z.boolean().default(true),
  /** Attachments larger than this (by their listed `fileSize`) are skipped with a per-document error. */
  attachment_max_bytes: z
    .number()
    .int()
    .positive()
    .default(20 * 1024 * 1024),
  /**
   * The site's time zone (IANA name, e.g. `America/New_York`): CQL reads dates in it, not in UTC
   * (CONFCLOUD-70966). Absent: polls ask from 12 hours earlier, which no site's offset can miss.
   */
  timezone: z
    .string()
    .trim()
    .refine(
      (zone) => {
        try {
          new Intl.DateTimeFormat('en', { timeZone: zone });
          return true;
        } catch {
          return false;
        }
      },
      { error: 'must be an IANA time zone, e.g. Europe/Paris' },
    )
    .optional(),
});
export type ConfluenceConfig = z.infer<typeof ConfluenceConfig>;

/** Cloud: the account's email and an API token (Basic). Data Center: a personal access token alone (Bearer). */
const ConfluenceCredential = z.object({
  confluence_username: z.string().trim().min(1).optional(),
  confluence_access_token: z.string({ error: 'required: an API token or personal access token' }).min(1),
});
export type ConfluenceCredential = z.infer<typeof ConfluenceCredential>;

const SERVICE = 'Confluence';
const PAGE_SIZE = 25;
const MEMBERS_PAGE = 200;

type Args = SourceRunContext<ConfluenceConfig, ConfluenceCredential>;

interface Links {
  next?: string;
  base?: string;
  webui?: string;
  download?: string;
}
/** A page's read restrictions (`restrictions.read.restrictions.user/group` expanded). */
interface Restrictions {
  read?: {
    restrictions?: { user?: { results?: Subject[] }; group?: { results?: { name: string }[] } };
  };
}
interface ContentPage {
  id: string;
  title: string;
  version?: { when?: string; by?: { displayName?: string; email?: string } };
  body?: { storage?: { value?: string } };
  restrictions?: Restrictions;
  /** Root first; their restrictions apply to the page too. */
  ancestors?: { id: string; restrictions?: Restrictions }[];
  /** Set by `searchPage` when the ancestors' restrictions could not be read (kas's own mark, not the API's). */
  unreadableAncestors?: boolean;
}
interface SearchResult {
  results: ContentPage[];
  totalSize?: number;
  _links?: Links;
}
interface Attachment {
  id: string;
  title: string;
  metadata?: { mediaType?: string };
  extensions?: { mediaType?: string; fileSize?: number };
  version?: { when?: string };
  _links?: Links;
}
interface Subject {
  accountId?: string;
  username?: string;
  email?: string;
}
interface SpacePermission {
  operation?: { operation?: string; targetType?: string };
  subjects?: { user?: { results?: Subject[] }; group?: { results?: { name: string }[] } };
  anonymousAccess?: boolean;
}

function headersOf(credential: ConfluenceCredential): Record<string, string> {
  const { confluence_username: user, confluence_access_token: token } = credential;
  return {
    authorization: user ? `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}` : `Bearer ${token}`,
  };
}

function rest(args: Args): RestContext {
  return { fetch: args.fetch, signal: args.signal };
}

/** `_links.next` is relative to the wiki base (`/rest/api/…`). */
function resolveNext(base: string, next: string): string {
  return /^https?:\/\//i.test(next) ? next : `${base}${next.startsWith('/') ? '' : '/'}${next}`;
}

const pageUrl = (base: string, id: string) => `${base}/pages/viewpage.action?pageId=${id}`;
const attachmentId = (base: string, att: Attachment) =>
  att._links?.download
    ? `${base}${att._links.download.replace(/\?.*$/, '')}`
    : `${base}/attachment/${att.id}`;

/** Westmost offset of any time zone: a UTC time this much earlier is before `since` wherever the site is. */
const WIDEST_OFFSET_MS = 12 * 3_600_000;

/**
 * A CQL date (`yyyy-MM-dd HH:mm`, minute precision, rounded down). Confluence reads it in the site's
 * time zone, not UTC (CONFCLOUD-70966): formatted in `timezone` when known, else in UTC from 12 hours
 * earlier (a site west of UTC would otherwise miss the edits of its offset's hours).
 */
function cqlTime(at: Date, timeZone: string | undefined): string {
  if (!timeZone) {
    const d = new Date(at.getTime() - WIDEST_OFFSET_MS).toISOString();
    return `${d.slice(0, 10)} ${d.slice(11, 16)}`;
  }
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(at)
      .map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
}

function cqlOf(config: ConfluenceConfig, since: Date | null): string {
  let cql = `type=page and space="${config.space}"`;
  if (config.page_id) cql += ` and (id=${config.page_id} or ancestor=${config.page_id})`;
  if (since) cql += ` and lastmodified >= "${cqlTime(since, config.timezone)}"`;
  return cql;
}

function searchUrl(config: ConfluenceConfig, since: Date | null, expand: string): string {
  const params = new URLSearchParams({ cql: cqlOf(config, since), limit: String(PAGE_SIZE) });
  if (expand) params.set('expand', expand);
  return `${config.wiki_base}/rest/api/content/search?${params}`;
}

/** The space must exist: a missing one (or a typo) must not look like a space whose pages were all deleted. */
async function checkSpace(args: Args): Promise<void> {
  const space = await getJson(
    rest(args),
    SERVICE,
    `${args.config.wiki_base}/rest/api/space/${encodeURIComponent(args.config.space)}`,
    headersOf(args.credential),
  );
  if (!space) throw new SourceError('config', `Confluence space "${args.config.space}" not found`);
}

/** Who may read the space: its read permissions (users, groups, anonymous access). */
async function spaceAccess(args: Args): Promise<{ access: ExternalAccess; groups: string[] }> {
  const space = await getJson<{ permissions?: SpacePermission[] }>(
    rest(args),
    SERVICE,
    `${args.config.wiki_base}/rest/api/space/${encodeURIComponent(args.config.space)}?expand=permissions`,
    headersOf(args.credential),
  );
  if (!space) throw new SourceError('config', `Confluence space "${args.config.space}" not found`);
  // Data Center has no `permissions` expansion: its 9.1+ space permissions API names them instead.
  if (space.permissions === undefined) return dataCenterSpaceAccess(args);
  const emails = new Set<string>();
  const ids = new Set<string>();
  const groups = new Set<string>();
  let isPublic = false;
  for (const permission of space.permissions) {
    if (permission.operation?.operation !== 'read' || permission.operation.targetType !== 'space') continue;
    if (permission.anonymousAccess) isPublic = true;
    for (const user of permission.subjects?.user?.results ?? []) {
      if (user.email) emails.add(user.email);
      const id = user.accountId ?? user.username;
      if (id) ids.add(id);
    }
    for (const group of permission.subjects?.group?.results ?? []) groups.add(group.name);
  }
  return {
    access: {
      is_public: isPublic,
      user_emails: [...emails],
      user_ids: [...ids],
      external_group_ids: [...groups],
    },
    groups: [...groups],
  };
}

/** One grant of Data Center's `GET /rest/api/space/{key}/permissions` (9.1+; users by `userKey`, CONFSERVER-100505). */
interface DataCenterSpacePermission {
  operation?: { operationKey?: string; targetType?: string };
  subject?: { type?: string; name?: string; userKey?: string };
}

/**
 * Who may read a Data Center space: the `read`/`space` grants of its permissions API (Confluence
 * 9.1+), users given by `userKey` and resolved to their user names (`/rest/api/user?key=`, as group
 * members and restrictions name them). Without that API (older versions) no reader is found, so
 * `sync` documents stay visible to no one (fails closed) and the run says so in the log.
 */
async function dataCenterSpaceAccess(args: Args): Promise<{ access: ExternalAccess; groups: string[] }> {
  const base = args.config.wiki_base;
  const space = encodeURIComponent(args.config.space);
  const found = await getJson<DataCenterSpacePermission[] | { results?: DataCenterSpacePermission[] }>(
    rest(args),
    SERVICE,
    `${base}/rest/api/space/${space}/permissions`,
    headersOf(args.credential),
  );
  const grants = Array.isArray(found) ? found : (found?.results ?? []);
  if (!found)
    args.logger.warn(
      'Confluence: the space permissions API (Data Center 9.1+) was not found; sync documents are visible to no one',
    );
  const emails = new Set<string>();
  const ids = new Set<string>();
  const groups = new Set<string>();
  for (const grant of grants) {
    if (grant.operation?.operationKey !== 'read' || grant.operation.targetType !== 'space') continue;
    if (grant.subject?.type === 'group' && grant.subject.name) groups.add(grant.subject.name);
    if (grant.subject?.type !== 'user' || !grant.subject.userKey) continue;
    const user = await getJson<Subject>(
      rest(args),
      SERVICE,
      `${base}/rest/api/user?key=${encodeURIComponent(grant.subject.userKey)}`,
      headersOf(args.credential),
    );
    if (user?.username) ids.add(user.username);
    if (user?.email) emails.add(user.email);
  }
  return {
    access: {
      is_public: false,
      user_emails: [...emails],
      user_ids: [...ids],
      external_group_ids: [...groups],
    },
    groups: [...groups],
  };
}

async function* attachmentsOf(args: Args, pageId: string): AsyncIterable<Attachment> {
  let url: string | null =
    `${args.config.wiki_base}/rest/api/content/${pageId}/child/attachment?limit=50&expand=version`;
  while (url) {
    const page: SearchResult | null = await getJson<SearchResult>(
      rest(args),
      SERVICE,
      url,
      headersOf(args.credential),
    );
    if (!page) return;
    for (const att of page.results as unknown as Attachment[]) yield att;
    url = page._links?.next ? resolveNext(args.config.wiki_base, page._links.next) : null;
  }
}

const tooLarge = (args: Args, att: Attachment, id: string): SourceDocumentFailure => ({
  document_id: id,
  link: id,
  message: `Attachment "${att.title}" is larger than ${args.config.attachment_max_bytes} bytes`,
});

/** A download refused by the outbound size cap (the file was listed smaller, or with no size). */
function overSizeCap(error: unknown): boolean {
  const cause = error instanceof SourceError ? error.cause : error;
  return cause instanceof OutboundError && cause.code === 'TOO_LARGE';
}

async function attachmentDocument(
  args: Args,
  page: ContentPage,
  att: Attachment,
  access: ExternalAccess | undefined,
): Promise<SourceDocument | SourceDocumentFailure | null> {
  const type = att.metadata?.mediaType ?? att.extensions?.mediaType ?? '';
  if (!att._links?.download || !kindOf(att.title, type)) return null;
  const id = attachmentId(args.config.wiki_base, att);
  // The listing gives the size: a large file is not downloaded at all.
  if ((att.extensions?.fileSize ?? 0) > args.config.attachment_max_bytes) return tooLarge(args, att, id);
  const response = await sourceRequest(
    rest(args),
    SERVICE,
    `${args.config.wiki_base}${att._links.download}`,
    {
      headers: headersOf(args.credential),
    },
  );
  if (response.status === 404) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  const data = new Uint8Array(await response.arrayBuffer());
  let text: string;
  try {
    text = await args.extract.text({ name: att.title, contentType: type, data });
  } catch (error) {
    if (args.signal.aborted) throw error;
    return {
      document_id: id,
      link: id,
      message: `Unreadable attachment "${att.title}"${unreadableReason(error)}`,
    };
  }
  if (!text.trim()) return { document_id: id, link: id, message: `Unreadable attachment "${att.title}"` };
  return {
    id,
    semantic_identifier: att.title,
    title: att.title,
    sections: [{ text, link: id }],
    metadata: { type: 'attachment', page: page.title },
    doc_updated_at: att.version?.when ? new Date(att.version.when) : null,
    ...(access ? { external_access: access } : {}),
  };
}

async function pageDocument(
  args: Args,
  page: ContentPage,
  access: ExternalAccess | undefined,
): Promise<SourceDocument> {
  const link = pageUrl(args.config.wiki_base, page.id);
  const { text } = await args.extract.html(`The page "${page.title}"`, page.body?.storage?.value ?? '');
  const author = page.version?.by;
  return {
    id: link,
    semantic_identifier: page.title,
    title: page.title,
    sections: [{ text: text || page.title, link }],
    metadata: { type: 'page', space: args.config.space },
    doc_updated_at: page.version?.when ? new Date(page.version.when) : null,
    ...(author?.displayName || author?.email
      ? { primary_owners: [{ display_name: author.displayName ?? null, email: author.email ?? null }] }
      : {}),
    ...(access ? { external_access: access } : {}),
  };
}

interface Checkpoint {
  next: string | null;
  /** Pages of the search page at `next` already done (a run stopped part-way through it). */
  offset?: number;
}

async function* load(args: LoadArgs<ConfluenceConfig, ConfluenceCredential>): AsyncIterable<SourceBatch> {
  await checkSpace(args);
  const sync = args.accessType === 'sync';
  const resolver = sync ? new PageAccess(args) : null;
  const saved = args.checkpoint as unknown as Checkpoint | null;
  let url: string | null =
    saved?.next ??
    searchUrl(args.config, args.window.start, `body.storage,version${sync ? `,${RESTRICTIONS_EXPAND}` : ''}`);
  /** Pages of the first search page already done by an attempt stopped by a rate limit. */
  let skip = saved?.offset ?? 0;
  while (url) {
    const result: SearchResult = await searchPage(args, url, resolver);
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    for (let i = skip; i < result.results.length; i++) {
      const page = result.results[i] as ContentPage;
      try {
        if (page.unreadableAncestors) {
          const link = pageUrl(args.config.wiki_base, page.id);
          failures.push({ document_id: link, link, message: UNREADABLE_ANCESTORS });
          continue;
        }
        const access = resolver ? await resolver.of(page) : undefined;
        try {
          documents.push(await pageDocument(args, page, access));
        } catch (error) {
          if (args.signal.aborted || error instanceof RateLimitedError) throw error;
          const link = pageUrl(args.config.wiki_base, page.id);
          failures.push({
            document_id: link,
            link,
            message: `Unreadable page "${page.title}"${unreadableReason(error)}`,
          });
        }
        if (!args.config.index_attachments) continue;
        for await (const att of attachmentsOf(args, page.id)) {
          let doc: SourceDocument | SourceDocumentFailure | null;
          try {
            doc = await attachmentDocument(args, page, att, access);
          } catch (error) {
            if (!overSizeCap(error)) throw error;
            doc = tooLarge(args, att, attachmentId(args.config.wiki_base, att));
          }
          if (!doc) continue;
          if ('id' in doc) documents.push(doc);
          else failures.push(doc);
        }
      } catch (error) {
        if (!(error instanceof RateLimitedError)) throw error;
        // What was read before the limit is kept: the next attempt reads this search page again from page i.
        const partial: Checkpoint = { next: url, offset: i };
        if (documents.length || failures.length)
          yield { documents, failures, checkpoint: partial as unknown as JsonValue };
        throw error;
      }
    }
    skip = 0;
    url = result._links?.next ? resolveNext(args.config.wiki_base, result._links.next) : null;
    const checkpoint: Checkpoint = { next: url };
    yield {
      documents,
      failures,
      checkpoint: url ? (checkpoint as unknown as JsonValue) : null,
      total: result.totalSize ?? null,
    };
  }
}

async function* listIds(args: Args): AsyncIterable<string[]> {
  await checkSpace(args);
  let url: string | null = searchUrl(args.config, null, '');
  while (url) {
    const result: SearchResult | null = await getJson<SearchResult>(
      rest(args),
      SERVICE,
      url,
      headersOf(args.credential),
    );
    if (!result) throw new SourceError('config', 'The Confluence search API was not found at wiki_base');
    const ids: string[] = [];
    for (const page of result.results) {
      ids.push(pageUrl(args.config.wiki_base, page.id));
      if (!args.config.index_attachments) continue;
      for await (const att of attachmentsOf(args, page.id))
        ids.push(attachmentId(args.config.wiki_base, att));
    }
    yield ids;
    url = result._links?.next ? resolveNext(args.config.wiki_base, result._links.next) : null;
  }
}

/** A group's members (`/rest/api/group/{name}/member`, paged). */
async function groupMembers(args: Args, name: string): Promise<Subject[]> {
  const members: Subject[] = [];
  let start = 0;
  for (;;) {
    const page = await getJson<{ results: Subject[]; size?: number; _links?: Links }>(
      rest(args),
      SERVICE,
      `${args.config.wiki_base}/rest/api/group/${encodeURIComponent(name)}/member?limit=${MEMBERS_PAGE}&start=${start}`,
      headersOf(args.credential),
    );
    if (!page) break;
    members.push(...page.results);
    if (!page._links?.next || page.results.length === 0) break;
    start += page.results.length;
  }
  return members;
}

const idOf = (s: Subject) => s.accountId ?? s.username;

/** Members of the groups that may read the space. */
async function externalGroups(args: Args): Promise<ExternalGroup[]> {
  const { groups } = await spaceAccess(args);
  const out: ExternalGroup[] = [];
  for (const name of groups) {
    const members = await groupMembers(args, name);
    out.push({
      group_id: name,
      member_emails: members.flatMap((m) => (m.email ? [m.email] : [])),
      member_ids: members.flatMap((m) => idOf(m) ?? []),
    });
  }
  return out;
}

/**
 * Confluence answers a whole search page with 404 when it expands the restrictions of an ancestor that
 * is a draft, outdated or trashed (CONFCLOUD-77618 / CONFCLOUD-76424; Onyx matches these messages).
 */
const ANCESTOR_BUG = /No content with id|Cannot find content/i;
const UNREADABLE_ANCESTORS =
  'The ancestors of this page could not be read, so neither could its restrictions';

/** A URL with its `expand` parameter replaced. */
function withExpand(url: string, expand: string): string {
  const parsed = new URL(url);
  if (expand) parsed.searchParams.set('expand', expand);
  else parsed.searchParams.delete('expand');
  return parsed.href;
}

/**
 * One page of a content search. With `resolver` (`sync`), a page that hits the ancestor-expansion
 * 404 is asked again without the ancestors' expansion, and each page's ancestors and their read
 * restrictions are read one by one (`restriction/byOperation/read`); a page whose ancestors cannot
 * be read is marked `unreadableAncestors`.
 */
async function searchPage(args: Args, url: string, resolver: PageAccess | null): Promise<SearchResult> {
  const response = await sourceRequest(rest(args), SERVICE, url, {
    headers: { accept: 'application/json', ...headersOf(args.credential) },
  });
  if (response.status === 404) {
    const body = await response.text().catch(() => '');
    const expand = new URL(url).searchParams.get('expand') ?? '';
    if (resolver && ANCESTOR_BUG.test(body) && expand.includes('ancestors.')) {
      const narrowed = expand
        .split(',')
        .filter((e) => !e.startsWith('ancestors.'))
        .join(',');
      const result = await searchPage(args, withExpand(url, narrowed), null);
      for (const page of result.results) {
        const ancestors = await resolver.ancestorsOf(page.id);
        if (ancestors) page.ancestors = ancestors;
        else page.unreadableAncestors = true;
      }
      // The next page is asked with every expansion again: the bug is rare, the fallback costly.
      if (result._links?.next)
        result._links.next = withExpand(resolveNext(args.config.wiki_base, result._links.next), expand);
      return result;
    }
    throw new SourceError('config', 'The Confluence search API was not found at wiki_base');
  }
  try {
    return (await response.json()) as SearchResult;
  } catch (error) {
    throw new SourceError('transient', `${SERVICE} sent a response that is not JSON`, { cause: error });
  }
}

const RESTRICTIONS_EXPAND = [
  'restrictions.read.restrictions.user',
  'restrictions.read.restrictions.group',
  'ancestors.restrictions.read.restrictions.user',
  'ancestors.restrictions.read.restrictions.group',
].join(',');

/** People named by subjects, matched by account id (or Data Center user name) or by email. */
class People {
  readonly ids = new Set<string>();
  readonly emails = new Set<string>();
  add(subject: Subject): void {
    const id = idOf(subject);
    if (id) this.ids.add(id);
    if (subject.email) this.emails.add(subject.email.toLowerCase());
  }
  has(subject: Subject): boolean {
    const id = idOf(subject);
    return (!!id && this.ids.has(id)) || (!!subject.email && this.emails.has(subject.email.toLowerCase()));
  }
}

/**
 * Who may read each page (`sync` access), for one run: the space's read permission, narrowed by the
 * read restrictions of the page and of each of its ancestors (Confluence applies them all). A
 * restricted page goes to the people every restriction names — directly or through a group, whose
 * members are read — who can also read the space; an unrestricted page keeps the space's access.
 */
class PageAccess {
  readonly #args: Args;
  #space: Promise<{ access: ExternalAccess; readers: People }> | null = null;
  readonly #members = new Map<string, Promise<Subject[]>>();
  /** Emails of accounts seen in group listings (restrictions often name a user by account id only). */
  readonly #emails = new Map<string, string>();
  constructor(args: Args) {
    this.#args = args;
  }
  #membersOf(name: string): Promise<Subject[]> {
    let found = this.#members.get(name);
    if (!found) {
      found = groupMembers(this.#args, name).then((members) => {
        for (const m of members) {
          const id = idOf(m);
          if (id && m.email) this.#emails.set(id, m.email);
        }
        return members;
      });
      this.#members.set(name, found);
    }
    return found;
  }
  readonly #ancestorRestrictions = new Map<string, Promise<Restrictions | undefined>>();

  /**
   * A page's ancestors (root first) with their read restrictions, one request each (cached for the
   * run); null when the page itself cannot be read. An ancestor that is no current content (a draft or
   * trashed page, the cause of the expansion bug) restricts nothing.
   */
  async ancestorsOf(pageId: string): Promise<{ id: string; restrictions?: Restrictions }[] | null> {
    const base = this.#args.config.wiki_base;
    const content = await getJson<{ ancestors?: { id: string }[] }>(
      rest(this.#args),
      SERVICE,
      `${base}/rest/api/content/${encodeURIComponent(pageId)}?expand=ancestors`,
      headersOf(this.#args.credential),
    );
    if (!content) return null;
    const out: { id: string; restrictions?: Restrictions }[] = [];
    for (const { id } of content.ancestors ?? []) {
      let restrictions = this.#ancestorRestrictions.get(id);
      if (!restrictions) {
        restrictions = getJson<{ restrictions?: NonNullable<Restrictions['read']>['restrictions'] }>(
          rest(this.#args),
          SERVICE,
          `${base}/rest/api/content/${encodeURIComponent(id)}/restriction/byOperation/read?expand=restrictions.user,restrictions.group`,
          headersOf(this.#args.credential),
        ).then((found) => (found ? { read: { restrictions: found.restrictions ?? {} } } : undefined));
        this.#ancestorRestrictions.set(id, restrictions);
      }
      const read = await restrictions;
      out.push(read ? { id, restrictions: read } : { id });
    }
    return out;
  }

  #emailOf(s: Subject): string | undefined {
    const id = idOf(s);
    return s.email ?? (id ? this.#emails.get(id) : undefined);
  }
  space(): Promise<{ access: ExternalAccess; readers: People }> {
    this.#space ??= (async () => {
      const { access, groups } = await spaceAccess(this.#args);
      const readers = new People();
      for (const id of access.user_ids ?? []) readers.ids.add(id);
      for (const email of access.user_emails) readers.emails.add(email.toLowerCase());
      for (const name of groups) for (const member of await this.#membersOf(name)) readers.add(member);
      return { access, readers };
    })();
    return this.#space;
  }
  async of(page: ContentPage): Promise<ExternalAccess> {
    const space = await this.space();
    const levels = [...(page.ancestors ?? []).map((a) => a.restrictions), page.restrictions]
      .map((r) => r?.read?.restrictions)
      .filter((r) => (r?.user?.results?.length ?? 0) + (r?.group?.results?.length ?? 0) > 0);
    if (!levels.length) return space.access;
    const named: { subjects: Subject[]; people: People }[] = [];
    for (const level of levels) {
      const subjects: Subject[] = (level?.user?.results ?? []).map((u) => ({
        ...u,
        email: this.#emailOf(u),
      }));
      for (const group of level?.group?.results ?? []) subjects.push(...(await this.#membersOf(group.name)));
      const people = new People();
      for (const subject of subjects) people.add(subject);
      named.push({ subjects, people });
    }
    const [first, ...rest] = named;
    const allowed = (first?.subjects ?? []).filter(
      (s) => rest.every((level) => level.people.has(s)) && (space.access.is_public || space.readers.has(s)),
    );
    return {
      is_public: false,
      user_emails: [...new Set(allowed.flatMap((s) => this.#emailOf(s) ?? []))],
      user_ids: [...new Set(allowed.flatMap((s) => idOf(s) ?? []))],
      external_group_ids: [],
    };
  }
}

/**
 * Current access of every page and attachment (permission sync on polls, which read only changed
 * pages): one pass over the space's pages with their restrictions, without bodies.
 */
async function* permissions(args: Args): AsyncIterable<PermissionEntry[]> {
  await checkSpace(args);
  const resolver = new PageAccess(args);
  let url: string | null = searchUrl(args.config, null, RESTRICTIONS_EXPAND);
  while (url) {
    const result: SearchResult = await searchPage(args, url, resolver);
    const batch: PermissionEntry[] = [];
    for (const page of result.results) {
      // Its ancestors could not be read: its recorded access stays until a run can read them.
      if (page.unreadableAncestors) continue;
      const access = await resolver.of(page);
      batch.push({ document_id: pageUrl(args.config.wiki_base, page.id), access });
      // A page's attachments (`/download/attachments/{page id}/…`) share its access: one entry for
      // them all, without listing them (a request per page on every run).
      if (args.config.index_attachments)
        batch.push({
          document_id_prefix: `${args.config.wiki_base}/download/attachments/${page.id}/`,
          access,
        });
    }
    yield batch;
    url = result._links?.next ? resolveNext(args.config.wiki_base, result._links.next) : null;
  }
}

/**
 * Confluence Cloud and Data Center (REST API v1): the pages of one space, or one page and its
 * descendants, as text (storage format), with their attachments; the space's read permissions for
 * `sync` access (users by account id or email, groups with their members, anonymous access), narrowed
 * by the read restrictions of each page and its ancestors.
 */
export const confluenceSource: Source<ConfluenceConfig, ConfluenceCredential> = {
  name: 'confluence',
  displayName: 'Confluence',
  needsCredential: true,
  inputTypes: ['poll', 'load_state'],
  publicCredentialKeys: ['confluence_username'],
  validateConfig: (raw) => validateWith(ConfluenceConfig, raw),
  validateCredential: (raw) => validateWith(ConfluenceCredential, raw),
  secretTargets: (config) => [{ key: 'connector_specific_config.wiki_base', url: config.wiki_base }],
  load,
  listIds,
  externalGroups,
  permissions,
};
