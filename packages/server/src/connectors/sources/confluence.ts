import { z } from 'zod';
import { kindOf } from '../../files/files.parse.ts';
import { getJson, type RestContext, sourceRequest } from './rest.ts';
import {
  type ExternalAccess,
  type ExternalGroup,
  type JsonValue,
  type LoadArgs,
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

/** CQL (dates in the form Confluence accepts, minute precision, UTC). */
function cqlOf(config: ConfluenceConfig, since: Date | null): string {
  let cql = `type=page and space="${config.space}"`;
  if (config.page_id) cql += ` and (id=${config.page_id} or ancestor=${config.page_id})`;
  if (since) {
    const d = since.toISOString();
    cql += ` and lastmodified >= "${d.slice(0, 10)} ${d.slice(11, 16)}"`;
  }
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
  const emails = new Set<string>();
  const ids = new Set<string>();
  const groups = new Set<string>();
  let isPublic = false;
  for (const permission of space.permissions ?? []) {
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

async function attachmentDocument(
  args: Args,
  page: ContentPage,
  att: Attachment,
  access: ExternalAccess | undefined,
): Promise<SourceDocument | SourceDocumentFailure | null> {
  const type = att.metadata?.mediaType ?? att.extensions?.mediaType ?? '';
  if (!att._links?.download || !kindOf(att.title, type)) return null;
  const id = attachmentId(args.config.wiki_base, att);
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
}

async function* load(args: LoadArgs<ConfluenceConfig, ConfluenceCredential>): AsyncIterable<SourceBatch> {
  await checkSpace(args);
  const sync = args.accessType === 'sync';
  const resolver = sync ? new PageAccess(args) : null;
  const saved = args.checkpoint as unknown as Checkpoint | null;
  let url: string | null =
    saved?.next ??
    searchUrl(args.config, args.window.start, `body.storage,version${sync ? `,${RESTRICTIONS_EXPAND}` : ''}`);
  while (url) {
    const result: SearchResult | null = await getJson<SearchResult>(
      rest(args),
      SERVICE,
      url,
      headersOf(args.credential),
    );
    if (!result) throw new SourceError('config', 'The Confluence search API was not found at wiki_base');
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    for (const page of result.results) {
      const access = resolver ? await resolver.of(page) : undefined;
      try {
        documents.push(await pageDocument(args, page, access));
      } catch (error) {
        if (args.signal.aborted) throw error;
        const link = pageUrl(args.config.wiki_base, page.id);
        failures.push({
          document_id: link,
          link,
          message: `Unreadable page "${page.title}"${unreadableReason(error)}`,
        });
      }
      if (!args.config.index_attachments) continue;
      for await (const att of attachmentsOf(args, page.id)) {
        const doc = await attachmentDocument(args, page, att, access);
        if (!doc) continue;
        if ('id' in doc) documents.push(doc);
        else failures.push(doc);
      }
    }
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
async function* permissions(args: Args): AsyncIterable<{ document_id: string; access: ExternalAccess }[]> {
  await checkSpace(args);
  const resolver = new PageAccess(args);
  let url: string | null = searchUrl(args.config, null, RESTRICTIONS_EXPAND);
  while (url) {
    const result: SearchResult | null = await getJson<SearchResult>(
      rest(args),
      SERVICE,
      url,
      headersOf(args.credential),
    );
    if (!result) throw new SourceError('config', 'The Confluence search API was not found at wiki_base');
    const batch: { document_id: string; access: ExternalAccess }[] = [];
    for (const page of result.results) {
      const access = await resolver.of(page);
      batch.push({ document_id: pageUrl(args.config.wiki_base, page.id), access });
      if (!args.config.index_attachments) continue;
      for await (const att of attachmentsOf(args, page.id))
        batch.push({ document_id: attachmentId(args.config.wiki_base, att), access });
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
