import { importPKCS8, SignJWT } from 'jose';
import { z } from 'zod';
import { kindOf } from '../../files/files.parse.ts';
import { domainGroupId } from '../../identity/principals.ts';
import { OutboundError, retryAfterMs } from '../../outbound/outbound.ts';
import { rateLimitedUntil } from './limits.ts';
import { jsonOrNull, type RestContext, sourceRequest } from './rest.ts';
import {
  type ExternalAccess,
  type ExternalGroup,
  type JsonValue,
  type LoadArgs,
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

const SERVICE = 'Google Drive';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const DRIVE_SCOPE = 'https://www.googleapis.com/auth/drive.readonly';
const GROUPS_SCOPE = 'https://www.googleapis.com/auth/admin.directory.group.readonly';
const FOLDER = 'application/vnd.google-apps.folder';
const SHORTCUT = 'application/vnd.google-apps.shortcut';
/** Google's own formats, exported as text (Sheets as CSV of the first sheet, as the API does). */
const EXPORTS: Record<string, string> = {
  'application/vnd.google-apps.document': 'text/plain',
  'application/vnd.google-apps.presentation': 'text/plain',
  'application/vnd.google-apps.spreadsheet': 'text/csv',
};
const MAX_FILE_BYTES = 20 * 1024 * 1024;
const PAGE_SIZE = 100;

/** A folder or shared drive by id, or by its Drive URL (`…/folders/<id>`, `…/drive/u/0/folders/<id>`). */
const DriveId = z
  .string()
  .trim()
  .min(1)
  .transform((v) => /\/folders\/([\w-]+)/.exec(v)?.[1] ?? v)
  .pipe(z.string().regex(/^[\w-]+$/, 'must be a Drive id or a folder URL'));

const GoogleDriveConfig = z.object({
  include_my_drive: z.boolean().default(true),
  include_shared_drives: z.boolean().default(true),
  /** Only these shared drives (default: every shared drive the credential sees). */
  shared_drive_ids: z.array(DriveId).default([]),
  /** Only these folders and their subfolders (overrides the two switches above). */
  folder_ids: z.array(DriveId).default([]),
  base_url: z
    .string()
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }))
    .transform((v) => v.replace(/\/+$/, ''))
    .default('https://www.googleapis.com'),
});
export type GoogleDriveConfig = z.infer<typeof GoogleDriveConfig>;

const ServiceAccountKey = z.object({
  client_email: z.string().min(1),
  private_key: z.string().includes('PRIVATE KEY', { error: 'must be a PEM private key' }),
  private_key_id: z.string().optional(),
  token_uri: z.url().optional(),
});

const OAuthTokens = z.object({
  refresh_token: z.string().min(1),
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  token_uri: z.url().optional(),
});

/** A JSON value given as an object or as the JSON text of one (as Google's key files are pasted). */
const jsonObject = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }, schema);

const GoogleDriveCredential = z
  .object({
    google_service_account_key: jsonObject(ServiceAccountKey).optional(),
    /** The user a service account acts as (domain-wide delegation); their My Drive is indexed. */
    google_primary_admin: z.email().optional(),
    google_tokens: jsonObject(OAuthTokens).optional(),
  })
  .superRefine((v, ctx) => {
    if (!v.google_service_account_key && !v.google_tokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['google_service_account_key'],
        message:
          'required: a service account key, or google_tokens {refresh_token, client_id, client_secret}',
      });
    }
  });
export type GoogleDriveCredential = z.infer<typeof GoogleDriveCredential>;

type Args = SourceRunContext<GoogleDriveConfig, GoogleDriveCredential>;

interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  modifiedTime?: string;
  webViewLink?: string;
  size?: string;
  owners?: { emailAddress?: string; displayName?: string }[];
  permissions?: DrivePermission[];
  shortcutDetails?: { targetId?: string; targetMimeType?: string };
}
interface DrivePermission {
  type: 'user' | 'group' | 'domain' | 'anyone';
  emailAddress?: string;
  domain?: string;
  role?: string;
  /** `false` for "anyone (at the domain) with the link": the file is not discoverable by search. */
  allowFileDiscovery?: boolean;
}

/**
 * Reasons of a Drive 403 that are quota, not permission ("Resolve a 403 error: User rate limit
 * exceeded", developers.google.com/drive/api/guides/handle-errors): back off and retry.
 */
const QUOTA_REASONS = new Set(['userRateLimitExceeded', 'rateLimitExceeded', 'dailyLimitExceeded']);
const QUOTA_WAIT_MS = 60_000;
/**
 * Reasons of a Drive 403 that concern one file: it is skipped with a per-document error and the run
 * goes on ("Docs exports are limited to 10 MB": `exportSizeLimitExceeded`, files.export reference).
 */
const ITEM_REASONS = new Set([
  'exportSizeLimitExceeded',
  'cannotExportFile',
  'cannotDownloadFile',
  'cannotDownloadAbusiveFile',
  'fileNotDownloadable',
  'insufficientFilePermissions',
]);

/** One file Drive refused to serve (a reason of `ITEM_REASONS`). */
class FileRefused extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** An access token for the run, fetched (and refreshed before it expires) from the token endpoint. */
class TokenSource {
  #token: { value: string; expiresAt: number } | null = null;
  readonly #args: Args;
  readonly #scope: string;
  constructor(args: Args, scope = DRIVE_SCOPE) {
    this.#args = args;
    this.#scope = scope;
  }

  async header(): Promise<Record<string, string>> {
    if (!this.#token || this.#token.expiresAt < Date.now() + 60_000) this.#token = await this.#fetch();
    return { authorization: `Bearer ${this.#token.value}` };
  }

  async #fetch(): Promise<{ value: string; expiresAt: number }> {
    const {
      google_service_account_key: key,
      google_primary_admin: subject,
      google_tokens: tokens,
    } = this.#args.credential;
    let tokenUri: string;
    let body: URLSearchParams;
    if (key) {
      tokenUri = key.token_uri ?? DEFAULT_TOKEN_URI;
      let signingKey: CryptoKey;
      try {
        signingKey = await importPKCS8(key.private_key, 'RS256');
      } catch (error) {
        throw new SourceError('auth', 'The service account key cannot be read (private_key)', {
          cause: error,
        });
      }
      const jwt = new SignJWT({ scope: this.#scope })
        .setProtectedHeader({
          alg: 'RS256',
          typ: 'JWT',
          ...(key.private_key_id ? { kid: key.private_key_id } : {}),
        })
        .setIssuer(key.client_email)
        .setAudience(tokenUri)
        .setIssuedAt()
        .setExpirationTime('1h');
      // `sub`: the user the service account acts as (domain-wide delegation).
      if (subject) jwt.setSubject(subject);
      const assertion = await jwt.sign(signingKey);
      body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
    } else if (tokens) {
      tokenUri = tokens.token_uri ?? DEFAULT_TOKEN_URI;
      body = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.client_id,
        client_secret: tokens.client_secret,
      });
    } else {
      throw new SourceError('config', 'The credential has neither a service account key nor OAuth tokens');
    }
    let response: Response;
    try {
      response = await this.#args.fetch(tokenUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: this.#args.signal,
      });
    } catch (error) {
      if (this.#args.signal.aborted) throw error;
      const reason = error instanceof OutboundError ? error.message : 'unreachable';
      throw new SourceError('transient', `Google's token endpoint: ${reason}`, { cause: error });
    }
    const json = (await response.json().catch(() => ({}))) as {
      access_token?: string;
      expires_in?: number;
      error?: string;
    };
    if (response.status === 429 || response.status >= 500) {
      throw new SourceError('transient', `Google's token endpoint answered ${response.status}`);
    }
    if (!response.ok || !json.access_token) {
      throw new SourceError(
        'auth',
        `Google refused the credential (${response.status}${json.error ? ` ${json.error}` : ''}): check the key or tokens and their access`,
      );
    }
    return { value: json.access_token, expiresAt: Date.now() + (json.expires_in ?? 3600) * 1000 };
  }
}

function rest(args: Args): RestContext {
  return { fetch: args.fetch, signal: args.signal };
}

/**
 * A Drive request: a 403 is told apart by its reason (quota → rate limited, one file → `FileRefused`,
 * otherwise the credential lacks access); 404 is returned to the caller.
 */
async function driveRequest(args: Args, url: string, headers: Record<string, string>): Promise<Response> {
  const response = await sourceRequest(rest(args), SERVICE, url, { headers }, [403]);
  if (response.status !== 403) return response;
  const body = (await response.json().catch(() => ({}))) as {
    error?: { message?: string; errors?: { reason?: string; message?: string }[] };
  };
  const reason = body.error?.errors?.find((e) => e.reason)?.reason ?? '';
  if (QUOTA_REASONS.has(reason)) {
    // Drive's quotas are counted per minute ("Usage limits"): without a Retry-After, a minute.
    const wait = retryAfterMs(response.headers.get('retry-after')) ?? QUOTA_WAIT_MS;
    throw rateLimitedUntil(SERVICE, new Date(Date.now() + wait), `is over its request quota (403 ${reason})`);
  }
  if (ITEM_REASONS.has(reason))
    throw new FileRefused(reason, `Google Drive refused the file (403 ${reason})`);
  throw new SourceError(
    'auth',
    `${SERVICE} refused the credential (403${reason ? ` ${reason}` : ''}): check the credential's keys and its access`,
  );
}

/** A Drive JSON GET; `null` for 404. */
async function driveJson<T>(args: Args, url: string, headers: Record<string, string>): Promise<T | null> {
  const response = await driveRequest(args, url, { accept: 'application/json', ...headers });
  return jsonOrNull<T>(response, SERVICE);
}

const FILE_FIELDS =
  'id,name,mimeType,modifiedTime,webViewLink,size,owners(emailAddress,displayName),shortcutDetails(targetId,targetMimeType)';
const PERMISSION_FIELDS = 'permissions(type,emailAddress,domain,role,allowFileDiscovery)';

/** One listing of files: a flat query (My Drive, a shared drive) or one folder's children. */
interface Listing {
  q: string;
  corpora: 'user' | 'drive' | 'allDrives';
  driveId?: string;
  /** A folder's children: subfolders become listings of their own; the poll window is applied here. */
  folder?: boolean;
}

/** A folder's children listing, in the same corpus as its parent's. */
const childListing = (parent: Listing, folderId: string): Listing => ({
  q: `'${folderId}' in parents and trashed = false`,
  corpora: parent.corpora,
  ...(parent.driveId ? { driveId: parent.driveId } : {}),
  folder: true,
});

/**
 * files.list over `allDrives` may answer `incompleteSearch: true`: "some search results might be
 * missing, since all documents were not searched" (files.list reference); Google's advice is to
 * search one corpus. The folder's own corpus is read (its shared drive, or the user's) and the
 * listing narrowed to it; null when it is already narrow.
 */
async function narrowed(args: Args, tokens: TokenSource, listing: Listing): Promise<Listing | null> {
  const folderId = /^'([\w-]+)' in parents/.exec(listing.q)?.[1];
  if (listing.corpora !== 'allDrives' || !folderId) return null;
  const params = new URLSearchParams({ supportsAllDrives: 'true', fields: 'id,driveId' });
  const folder = await driveJson<{ driveId?: string }>(
    args,
    `${args.config.base_url}/drive/v3/files/${encodeURIComponent(folderId)}?${params}`,
    await tokens.header(),
  );
  return folder?.driveId
    ? { ...listing, corpora: 'drive', driveId: folder.driveId }
    : { ...listing, corpora: 'user' };
}

const driveTime = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, '');

function listUrl(
  config: GoogleDriveConfig,
  listing: Listing,
  pageToken: string | null,
  fields: string,
): string {
  const params: URLSearchParams = new URLSearchParams({
    q: listing.q,
    corpora: listing.corpora,
    pageSize: String(PAGE_SIZE),
    supportsAllDrives: 'true',
    includeItemsFromAllDrives: String(listing.corpora !== 'user'),
    fields: `nextPageToken,incompleteSearch,files(${fields})`,
  });
  if (listing.driveId) params.set('driveId', listing.driveId);
  if (pageToken) params.set('pageToken', pageToken);
  return `${config.base_url}/drive/v3/files?${params}`;
}

/** The listings a run starts with: the configured folders, or My Drive and the shared drives. */
async function initialListings(args: Args, tokens: TokenSource, since: Date | null): Promise<Listing[]> {
  const { config } = args;
  const window = since ? ` and modifiedTime > '${driveTime(since)}'` : '';
  if (config.folder_ids.length) {
    return config.folder_ids.map((id) => ({
      q: `'${id}' in parents and trashed = false`,
      corpora: 'allDrives',
      folder: true,
    }));
  }
  const listings: Listing[] = [];
  if (config.include_my_drive) {
    listings.push({
      q: `'me' in owners and trashed = false and mimeType != '${FOLDER}'${window}`,
      corpora: 'user',
    });
  }
  if (config.include_shared_drives) {
    let drives = config.shared_drive_ids;
    if (!drives.length) {
      drives = [];
      let pageToken: string | null = null;
      do {
        const params: URLSearchParams = new URLSearchParams({
          pageSize: '100',
          ...(pageToken ? { pageToken } : {}),
        });
        const page: { drives?: { id: string }[]; nextPageToken?: string } | null = await driveJson(
          args,
          `${config.base_url}/drive/v3/drives?${params}`,
          await tokens.header(),
        );
        for (const drive of page?.drives ?? []) drives.push(drive.id);
        pageToken = page?.nextPageToken ?? null;
      } while (pageToken);
    }
    for (const driveId of drives) {
      listings.push({ q: `trashed = false and mimeType != '${FOLDER}'${window}`, corpora: 'drive', driveId });
    }
  }
  return listings;
}

const documentIdOf = (file: Pick<DriveFile, 'id'>) => `https://drive.google.com/open?id=${file.id}`;

function accessOf(permissions: DrivePermission[]): ExternalAccess {
  const emails = new Set<string>();
  const groups = new Set<string>();
  let isPublic = false;
  for (const p of permissions) {
    if (p.type === 'anyone') isPublic = true;
    else if (p.type === 'user' && p.emailAddress) emails.add(p.emailAddress.toLowerCase());
    else if (p.type === 'group' && p.emailAddress) groups.add(p.emailAddress.toLowerCase());
    // A link-only domain share ("anyone at corp.example with the link", `allowFileDiscovery: false`)
    // lets people open the file if they have its link; it does not make it findable, so it grants
    // nothing here (as Onyx). An `anyone` link share is public, as Onyx treats it.
    else if (p.type === 'domain' && p.domain && p.allowFileDiscovery !== false)
      groups.add(domainGroupId(p.domain));
  }
  return { is_public: isPublic, user_emails: [...emails], external_group_ids: [...groups] };
}

async function permissionsOf(args: Args, tokens: TokenSource, file: DriveFile): Promise<ExternalAccess> {
  const permissions: DrivePermission[] = [];
  let pageToken: string | null = null;
  do {
    const params: URLSearchParams = new URLSearchParams({
      supportsAllDrives: 'true',
      fields: `nextPageToken,${PERMISSION_FIELDS}`,
      ...(pageToken ? { pageToken } : {}),
    });
    const page: { permissions?: DrivePermission[]; nextPageToken?: string } | null = await driveJson(
      args,
      `${args.config.base_url}/drive/v3/files/${encodeURIComponent(file.id)}/permissions?${params}`,
      await tokens.header(),
    );
    permissions.push(...(page?.permissions ?? []));
    pageToken = page?.nextPageToken ?? null;
  } while (pageToken);
  return accessOf(permissions);
}

/** The file's text: Google formats exported, other readable types downloaded; null for types kas skips. */
async function textOf(
  args: Args,
  tokens: TokenSource,
  file: DriveFile,
): Promise<string | null | SourceDocumentFailure> {
  const base = `${args.config.base_url}/drive/v3/files/${encodeURIComponent(file.id)}`;
  const exportAs = EXPORTS[file.mimeType];
  const failure = (message: string): SourceDocumentFailure => ({
    document_id: documentIdOf(file),
    link: file.webViewLink ?? null,
    message,
  });
  if (
    !exportAs &&
    (file.mimeType.startsWith('application/vnd.google-apps.') || !kindOf(file.name, file.mimeType))
  )
    return null;
  if (!exportAs && Number(file.size ?? 0) > MAX_FILE_BYTES)
    return failure(`"${file.name}" is larger than 20 MB`);
  const url = exportAs
    ? `${base}/export?${new URLSearchParams({ mimeType: exportAs })}`
    : `${base}?alt=media&supportsAllDrives=true`;
  let response: Response;
  try {
    response = await driveRequest(args, url, await tokens.header());
  } catch (error) {
    if (error instanceof FileRefused) return failure(`"${file.name}": ${error.message}`);
    throw error;
  }
  if (response.status === 404) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  const data = new Uint8Array(await response.arrayBuffer());
  let text: string;
  try {
    text = await args.extract.text({ name: file.name, contentType: exportAs ?? file.mimeType, data });
  } catch (error) {
    if (args.signal.aborted) throw error;
    return failure(`Unreadable file "${file.name}"${unreadableReason(error)}`);
  }
  return text.trim() || exportAs ? text : failure(`Unreadable file "${file.name}"`);
}

/**
 * The file a shortcut points to (Drive API "Create a shortcut to a file": `shortcutDetails.targetId`),
 * indexed under the target's own id so that it and the shortcut are one document; null for a
 * shortcut to a folder or to a file that is gone or unreadable.
 */
async function shortcutTarget(
  args: Args,
  tokens: TokenSource,
  shortcut: DriveFile,
): Promise<DriveFile | null> {
  const target = shortcut.shortcutDetails?.targetId;
  if (!target || shortcut.shortcutDetails?.targetMimeType === FOLDER) return null;
  const params = new URLSearchParams({ supportsAllDrives: 'true', fields: FILE_FIELDS });
  try {
    return await driveJson<DriveFile>(
      args,
      `${args.config.base_url}/drive/v3/files/${encodeURIComponent(target)}?${params}`,
      await tokens.header(),
    );
  } catch (error) {
    if (error instanceof FileRefused) return null;
    throw error;
  }
}

interface Checkpoint {
  listings: Listing[];
  pageToken: string | null;
  /** Files of the page at `pageToken` already done (a run stopped part-way through the page). */
  offset?: number;
}

/** One file as a document, or its failure; null when it is not indexed (a type kas does not read, gone). */
async function fileDocument(
  args: Args,
  tokens: TokenSource,
  file: DriveFile,
): Promise<SourceDocument | SourceDocumentFailure | null> {
  const sync = args.accessType === 'sync';
  const text = await textOf(args, tokens, file);
  if (text === null) return null;
  if (typeof text !== 'string') return text;
  const id = documentIdOf(file);
  const owner = file.owners?.[0];
  let access: ExternalAccess | undefined;
  try {
    access = sync ? await permissionsOf(args, tokens, file) : undefined;
  } catch (error) {
    if (!(error instanceof FileRefused)) throw error;
    return { document_id: id, link: file.webViewLink ?? null, message: error.message };
  }
  return {
    id,
    semantic_identifier: file.name,
    title: file.name,
    sections: [{ text, link: file.webViewLink ?? id }],
    metadata: { mime_type: file.mimeType },
    doc_updated_at: file.modifiedTime ? new Date(file.modifiedTime) : null,
    ...(owner
      ? {
          primary_owners: [{ display_name: owner.displayName ?? null, email: owner.emailAddress ?? null }],
        }
      : {}),
    ...(access ? { external_access: access } : {}),
  };
}

/**
 * The files a run before failed on, read again by id (`files.get`), without listing anything: a run
 * after one that ended with per-item errors retries only those. A file gone or no longer readable is
 * left out.
 */
async function* loadItems(args: Args, documentIds: string[]): AsyncIterable<SourceBatch> {
  const tokens = new TokenSource(args);
  const params = new URLSearchParams({ supportsAllDrives: 'true', fields: FILE_FIELDS });
  const documents: SourceDocument[] = [];
  const failures: SourceDocumentFailure[] = [];
  for (const documentId of documentIds) {
    const fileId = /^https:\/\/drive\.google\.com\/open\?id=(.+)$/.exec(documentId)?.[1];
    if (!fileId) continue;
    let file: DriveFile | null;
    try {
      file = await driveJson<DriveFile>(
        args,
        `${args.config.base_url}/drive/v3/files/${encodeURIComponent(fileId)}?${params}`,
        await tokens.header(),
      );
    } catch (error) {
      if (!(error instanceof FileRefused)) throw error;
      failures.push({ document_id: documentId, message: error.message });
      continue;
    }
    if (!file) continue;
    const read = await fileDocument(args, tokens, file);
    if (read && 'id' in read) documents.push(read);
    else if (read) failures.push(read);
  }
  yield { documents, failures, checkpoint: null };
}

async function* load(args: LoadArgs<GoogleDriveConfig, GoogleDriveCredential>): AsyncIterable<SourceBatch> {
  const tokens = new TokenSource(args);
  const since = args.window.start;
  const saved = args.checkpoint as unknown as Checkpoint | null;
  const listings = saved ? [...saved.listings] : await initialListings(args, tokens, since);
  let pageToken = saved?.pageToken ?? null;
  /** Files of the first page already done by an attempt stopped by a rate limit. */
  let skip = saved?.offset ?? 0;
  while (listings.length) {
    const listing = listings[0] as Listing;
    const page = await driveJson<{ files?: DriveFile[]; nextPageToken?: string; incompleteSearch?: boolean }>(
      args,
      listUrl(args.config, listing, pageToken, FILE_FIELDS),
      await tokens.header(),
    );
    const narrower = page?.incompleteSearch ? await narrowed(args, tokens, listing) : null;
    if (narrower) {
      // Listed again from its start in the narrower corpus (pages already read are read again).
      listings[0] = narrower;
      pageToken = null;
      skip = 0;
      continue;
    }
    if (!page && listing.folder)
      throw new SourceError('config', `Google Drive folder not found (${listing.q.split("'")[1]})`);
    if (!page && listing.driveId)
      throw new SourceError('config', `Shared drive ${listing.driveId} not found`);
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    /** One listed file: indexed, recorded as failed, or skipped. */
    const one = async (listed: DriveFile): Promise<void> => {
      if (listed.mimeType === FOLDER) {
        if (listing.folder) listings.push(childListing(listing, listed.id));
        return;
      }
      if (listing.folder && since && listed.modifiedTime && new Date(listed.modifiedTime) <= since) return;
      const file = listed.mimeType === SHORTCUT ? await shortcutTarget(args, tokens, listed) : listed;
      if (!file) return;
      const read = await fileDocument(args, tokens, file);
      if (read && 'id' in read) documents.push(read);
      else if (read) failures.push(read);
    };
    const files = page?.files ?? [];
    for (let i = skip; i < files.length; i++) {
      try {
        await one(files[i] as DriveFile);
      } catch (error) {
        if (!(error instanceof RateLimitedError)) throw error;
        // What was read before the limit is kept: the next attempt reads this page again from file i.
        const partial: Checkpoint = { listings, pageToken, offset: i };
        if (documents.length || failures.length)
          yield { documents, failures, checkpoint: partial as unknown as JsonValue };
        throw error;
      }
    }
    skip = 0;
    pageToken = page?.nextPageToken ?? null;
    if (!pageToken) listings.shift();
    const checkpoint: Checkpoint = { listings, pageToken };
    yield { documents, failures, checkpoint: listings.length ? (checkpoint as unknown as JsonValue) : null };
  }
}

/** Every file the listings reach, page by page (folders are walked, not yielded). */
async function* listFiles(args: Args, fields: string): AsyncIterable<DriveFile[]> {
  const tokens = new TokenSource(args);
  const listings = await initialListings(args, tokens, null);
  while (listings.length) {
    let listing = listings.shift() as Listing;
    let pageToken: string | null = null;
    for (;;) {
      const page: { files?: DriveFile[]; nextPageToken?: string; incompleteSearch?: boolean } | null =
        await driveJson(args, listUrl(args.config, listing, pageToken, fields), await tokens.header());
      if (!page) throw new SourceError('config', 'A configured folder or shared drive was not found');
      // An incomplete listing would make a prune remove what it missed: list the narrower corpus.
      const narrower = page.incompleteSearch ? await narrowed(args, tokens, listing) : null;
      if (narrower) {
        listing = narrower;
        pageToken = null;
        continue;
      }
      const files: DriveFile[] = [];
      for (const file of page.files ?? []) {
        if (file.mimeType !== FOLDER) files.push(file);
        else if (listing.folder) listings.push(childListing(listing, file.id));
      }
      yield files;
      pageToken = page.nextPageToken ?? null;
      if (!pageToken) break;
    }
  }
}

async function* listIds(args: Args): AsyncIterable<string[]> {
  for await (const files of listFiles(args, 'id,mimeType,shortcutDetails(targetId)'))
    yield files.map((f) =>
      documentIdOf(
        f.mimeType === SHORTCUT && f.shortcutDetails?.targetId ? { id: f.shortcutDetails.targetId } : f,
      ),
    );
}

/** Current permissions of every file (a sharing change does not change a file's modifiedTime, so polls miss it). */
async function* permissions(args: Args): AsyncIterable<{ document_id: string; access: ExternalAccess }[]> {
  const tokens = new TokenSource(args);
  for await (const files of listFiles(args, `id,mimeType,shortcutDetails(targetId),${PERMISSION_FIELDS}`)) {
    const batch: { document_id: string; access: ExternalAccess }[] = [];
    for (const listed of files) {
      // A shortcut's own grants are not its target's: the target's are read.
      const target = listed.mimeType === SHORTCUT ? listed.shortcutDetails?.targetId : undefined;
      const file = target ? { ...listed, id: target, permissions: undefined } : listed;
      try {
        // Files of shared drives come without permissions in a listing: ask for them.
        const access = file.permissions
          ? accessOf(file.permissions)
          : await permissionsOf(args, tokens, file);
        batch.push({ document_id: documentIdOf(file), access });
      } catch (error) {
        // Unreadable grants leave the document's recorded access as it is; the next run tries again.
        if (!(error instanceof FileRefused)) throw error;
        args.logger.warn(`Google Drive: the permissions of ${file.id} could not be read (${error.reason})`);
      }
    }
    yield batch;
  }
}

/**
 * The Workspace's groups and their members (Admin SDK Directory API), for Drive permissions granted to
 * a group. Needs a service account acting as an admin; without that, group grants match no one.
 */
async function externalGroups(args: Args): Promise<ExternalGroup[]> {
  if (!args.credential.google_service_account_key || !args.credential.google_primary_admin) return [];
  const tokens = new TokenSource(args, GROUPS_SCOPE);
  const base = `${args.config.base_url}/admin/directory/v1`;
  const groups: ExternalGroup[] = [];
  let pageToken: string | null = null;
  try {
    do {
      const params: URLSearchParams = new URLSearchParams({
        customer: 'my_customer',
        maxResults: '200',
        ...(pageToken ? { pageToken } : {}),
      });
      const page: { groups?: { email: string }[]; nextPageToken?: string } | null = await driveJson(
        args,
        `${base}/groups?${params}`,
        await tokens.header(),
      );
      for (const group of page?.groups ?? []) {
        const members: string[] = [];
        let memberToken: string | null = null;
        do {
          const mp: URLSearchParams = new URLSearchParams({
            maxResults: '200',
            ...(memberToken ? { pageToken: memberToken } : {}),
          });
          const list: { members?: { email?: string }[]; nextPageToken?: string } | null = await driveJson(
            args,
            `${base}/groups/${encodeURIComponent(group.email)}/members?${mp}`,
            await tokens.header(),
          );
          for (const m of list?.members ?? []) if (m.email) members.push(m.email.toLowerCase());
          memberToken = list?.nextPageToken ?? null;
        } while (memberToken);
        groups.push({ group_id: group.email.toLowerCase(), member_emails: members });
      }
      pageToken = page?.nextPageToken ?? null;
    } while (pageToken);
  } catch (error) {
    if (error instanceof SourceError && error.kind === 'auth') {
      args.logger.warn(
        'Google Drive: the credential cannot read Workspace groups; group permissions match no one',
      );
      return [];
    }
    throw error;
  }
  return groups;
}

/**
 * Google Drive (API v3): My Drive of the credential's user, shared drives, or chosen folders with their
 * subfolders. Google Docs/Slides are exported as text and Sheets as CSV; PDF, DOCX and text files are
 * downloaded and read. Service account (JWT grant signed with `jose`, optionally acting as a user) or
 * OAuth tokens (refresh grant). File permissions (users, groups, domain, anyone) for `sync` access.
 */
export const googleDriveSource: Source<GoogleDriveConfig, GoogleDriveCredential> = {
  name: 'google_drive',
  displayName: 'Google Drive',
  needsCredential: true,
  inputTypes: ['poll', 'load_state'],
  publicCredentialKeys: ['google_primary_admin'],
  validateConfig: (raw) => validateWith(GoogleDriveConfig, raw),
  validateCredential: (raw) => validateWith(GoogleDriveCredential, raw),
  secretTargets: (config, credential) => [
    { key: 'connector_specific_config.base_url', url: config.base_url },
    ...(credential.google_service_account_key
      ? [
          {
            key: 'credential_json.google_service_account_key.token_uri',
            url: credential.google_service_account_key.token_uri ?? DEFAULT_TOKEN_URI,
          },
        ]
      : []),
    ...(credential.google_tokens
      ? [
          {
            key: 'credential_json.google_tokens.token_uri',
            url: credential.google_tokens.token_uri ?? DEFAULT_TOKEN_URI,
          },
        ]
      : []),
  ],
  load,
  listIds,
  permissions,
  externalGroups,
  loadItems,
};
