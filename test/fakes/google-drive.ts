import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jwtVerify } from 'jose';

/**
 * A local Google: the OAuth token endpoint (service-account JWT grant verified against the key's public
 * half, refresh-token grant), Drive API v3 (files.list with the `q` subset kas sends, corpora/driveId,
 * pageToken paging; drives.list; files.export; alt=media downloads; permissions.list) and the Admin SDK
 * Directory groups and members. 429 with Retry-After on demand, and the documented refusals:
 * - quota as 403 `userRateLimitExceeded` without Retry-After ("If you exceed a quota, you'll receive a
 *   403: User rate limit exceeded … might also generate a 429", developers.google.com/drive/api/guides/limits
 *   and /handle-errors);
 * - a Docs Editors export over 10 MB is 403 `exportSizeLimitExceeded` ("The exported content is limited
 *   to 10MB", developers.google.com/drive/api/reference/rest/v3/files/export);
 * - one file's download refused with its own 403 reason (`cannotDownloadFile`, handle-errors guide);
 * - grants carry `allowFileDiscovery` (`false`: "anyone with the link", permissions resource);
 * - shortcuts (`application/vnd.google-apps.shortcut`) carry `shortcutDetails.targetId` and their target's
 *   metadata is read with files.get (developers.google.com/drive/api/guides/shortcuts);
 * - files.list over `corpora=allDrives` may answer `incompleteSearch: true` with results missing ("some
 *   search results might be missing, since all documents were not searched", files.list reference):
 *   with `incompleteSearch` set, such a listing leaves out shared-drive files.
 */
export interface FakeDriveFile {
  id: string;
  name: string;
  mimeType: string;
  /** Parent folder ids (a file at a shared drive's root has the drive id as parent). */
  parents: string[];
  /** Set for files in a shared drive. */
  driveId?: string;
  owner: string;
  modifiedTime: Date;
  content: string | Buffer;
  permissions: {
    type: 'user' | 'group' | 'domain' | 'anyone';
    emailAddress?: string;
    domain?: string;
    role: string;
    allowFileDiscovery?: boolean;
  }[];
  trashed?: boolean;
  /** A shortcut's target file id (`mimeType` must be the shortcut type). */
  shortcutTarget?: string;
  /** Downloading or exporting this file answers 403 with this reason (e.g. `cannotDownloadFile`). */
  refused?: string;
}

export interface FakeGoogle {
  /** The API base (`connector_specific_config.base_url`). */
  url: string;
  tokenUri: string;
  /** A service account key file as Google issues it (its token_uri points here). */
  serviceAccountKey: Record<string, string>;
  /** Service-account subjects (impersonated users) allowed; the JWT's `sub`. */
  delegatedUsers: Set<string>;
  /** OAuth clients: refresh token → the user it acts for. */
  refreshTokens: Map<string, string>;
  oauthClient: { client_id: string; client_secret: string };
  files: Map<string, FakeDriveFile>;
  drives: Map<string, string>;
  groups: Map<string, string[]>;
  pageSize: number;
  /** The next `remaining` API requests are refused: 429 with Retry-After, or (`quota403`) 403 `userRateLimitExceeded` without it. */
  rateLimit: { remaining: number; retryAfter: number; quota403?: boolean };
  /** Largest Docs Editors export (bytes); Google's is 10 MB. */
  exportLimitBytes: number;
  /** `corpora=allDrives` listings are incomplete: shared-drive files left out, `incompleteSearch: true`. */
  incompleteSearch: boolean;
  /** Token grants issued: the user each acted for and the scope. */
  grants: { user: string; scope: string }[];
  requests: string[];
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    req.on('data', (c) => {
      data += c;
    });
    req.on('end', () => resolve(data));
  });
}

/** Evaluates the Drive `q` clauses kas sends, joined by `and`. */
function matchesQuery(file: FakeDriveFile, q: string, user: string): boolean {
  for (const raw of q.split(/\s+and\s+/)) {
    const clause = raw.trim();
    const parent = /^'([\w-]+)' in parents$/.exec(clause);
    const notType = /^mimeType != '([^']+)'$/.exec(clause);
    const since = /^modifiedTime > '([^']+)'$/.exec(clause);
    if (clause === 'trashed = false') {
      if (file.trashed) return false;
    } else if (clause === "'me' in owners") {
      if (file.owner !== user) return false;
    } else if (parent) {
      if (!file.parents.includes(parent[1] as string)) return false;
    } else if (notType) {
      if (file.mimeType === notType[1]) return false;
    } else if (since) {
      if (file.modifiedTime.getTime() <= Date.parse(`${since[1]}Z`)) return false;
    } else {
      throw new Error(`fake Drive does not understand q clause: ${clause}`);
    }
  }
  return true;
}

export async function startFakeGoogle(): Promise<FakeGoogle> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const verifyKey: KeyObject = publicKey;
  const tokens = new Map<string, { user: string; scope: string }>();
  let next = 0;
  const state = {
    delegatedUsers: new Set<string>(),
    refreshTokens: new Map<string, string>(),
    oauthClient: { client_id: 'kas-client', client_secret: 'kas-secret' },
    files: new Map<string, FakeDriveFile>(),
    drives: new Map<string, string>(),
    groups: new Map<string, string[]>(),
    pageSize: 2,
    rateLimit: { remaining: 0, retryAfter: 1 } as FakeGoogle['rateLimit'],
    exportLimitBytes: 10 * 1024 * 1024,
    incompleteSearch: false,
    grants: [] as { user: string; scope: string }[],
    requests: [] as string[],
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  };
  /** A 403 in Google's error shape, its reason in `errors[0].reason` (the handle-errors guide's examples). */
  const refuse = (res: ServerResponse, reason: string, message: string, domain = 'global') =>
    json(res, 403, { error: { code: 403, message, errors: [{ domain, reason, message }] } });
  const metadata = (f: FakeDriveFile, fields: string) => ({
    id: f.id,
    name: f.name,
    mimeType: f.mimeType,
    modifiedTime: f.modifiedTime.toISOString(),
    webViewLink: `https://docs.example/${f.id}/view`,
    ...(f.driveId ? { driveId: f.driveId } : {}),
    ...(typeof f.content === 'string' || Buffer.isBuffer(f.content)
      ? { size: String(f.content.length) }
      : {}),
    owners: [{ emailAddress: f.owner, displayName: f.owner.split('@')[0] }],
    ...(f.shortcutTarget
      ? {
          shortcutDetails: {
            targetId: f.shortcutTarget,
            targetMimeType: state.files.get(f.shortcutTarget)?.mimeType ?? 'application/octet-stream',
          },
        }
      : {}),
    // As Google does: permissions in a listing only when asked for, and never for shared drive files.
    ...(fields.includes('permissions(') && !f.driveId ? { permissions: f.permissions } : {}),
  });
  let origin = '';
  const serviceAccountEmail = 'indexer@kas-test.iam.gserviceaccount.com';
  const issue = (res: ServerResponse, user: string, scope: string) => {
    const token = `ya29.fake-${++next}`;
    tokens.set(token, { user, scope });
    state.grants.push({ user, scope });
    json(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
  };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    state.requests.push(`${req.method} ${path}`);
    if (path === '/token' && req.method === 'POST') {
      const form = new URLSearchParams(await readBody(req));
      if (form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
        try {
          const { payload } = await jwtVerify(form.get('assertion') ?? '', verifyKey, {
            issuer: serviceAccountEmail,
            audience: `${origin}/token`,
          });
          const user = payload.sub ?? serviceAccountEmail;
          if (payload.sub && !state.delegatedUsers.has(payload.sub))
            return json(res, 401, {
              error: 'unauthorized_client',
              error_description: 'Client is unauthorized',
            });
          return issue(res, user, String(payload.scope));
        } catch {
          return json(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
        }
      }
      if (form.get('grant_type') === 'refresh_token') {
        if (
          form.get('client_id') !== state.oauthClient.client_id ||
          form.get('client_secret') !== state.oauthClient.client_secret
        )
          return json(res, 401, { error: 'invalid_client' });
        const user = state.refreshTokens.get(form.get('refresh_token') ?? '');
        if (!user)
          return json(res, 400, {
            error: 'invalid_grant',
            error_description: 'Token has been expired or revoked.',
          });
        return issue(res, user, 'https://www.googleapis.com/auth/drive.readonly');
      }
      return json(res, 400, { error: 'unsupported_grant_type' });
    }
    const grant = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!grant)
      return json(res, 401, {
        error: { code: 401, message: 'Request had invalid authentication credentials.' },
      });
    if (state.rateLimit.remaining > 0) {
      state.rateLimit.remaining--;
      if (state.rateLimit.quota403)
        return refuse(res, 'userRateLimitExceeded', 'User rate limit exceeded.', 'usageLimits');
      res.setHeader('retry-after', String(state.rateLimit.retryAfter));
      return json(res, 429, { error: { code: 429, message: 'Rate Limit Exceeded' } });
    }
    const start = Number(url.searchParams.get('pageToken') ?? 0);
    const size = Math.min(
      Number(url.searchParams.get('pageSize') ?? url.searchParams.get('maxResults') ?? 100),
      state.pageSize,
    );
    const page = <T>(items: T[]) => ({
      slice: items.slice(start, start + size),
      ...(start + size < items.length ? { nextPageToken: String(start + size) } : {}),
    });

    if (path === '/drive/v3/files') {
      const corpora = url.searchParams.get('corpora') ?? 'user';
      const driveId = url.searchParams.get('driveId');
      const q = url.searchParams.get('q') ?? '';
      const incomplete = corpora === 'allDrives' && state.incompleteSearch;
      const found = [...state.files.values()]
        .filter((f) => (corpora === 'drive' ? f.driveId === driveId : corpora === 'user' ? !f.driveId : true))
        .filter((f) => !(incomplete && f.driveId))
        .filter((f) => matchesQuery(f, q, grant.user))
        .sort((a, b) => a.id.localeCompare(b.id));
      const { slice, nextPageToken } = page(found);
      return json(res, 200, {
        files: slice.map((f) => metadata(f, url.searchParams.get('fields') ?? '')),
        ...(incomplete ? { incompleteSearch: true } : {}),
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    }
    if (path === '/drive/v3/drives') {
      const { slice, nextPageToken } = page([...state.drives.entries()]);
      return json(res, 200, {
        drives: slice.map(([id, name]) => ({ id, name })),
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    }
    const file = /^\/drive\/v3\/files\/([\w-]+)(\/export|\/permissions)?$/.exec(path);
    if (file) {
      const f = state.files.get(file[1] as string);
      if (!f) return json(res, 404, { error: { code: 404, message: `File not found: ${file[1]}.` } });
      if (file[2] === '/permissions') {
        const { slice, nextPageToken } = page(f.permissions);
        return json(res, 200, { permissions: slice, ...(nextPageToken ? { nextPageToken } : {}) });
      }
      if (file[2] === '/export') {
        if (!f.mimeType.startsWith('application/vnd.google-apps.'))
          return refuse(res, 'fileNotExportable', 'Export only supports Docs Editors files.');
        if (f.refused)
          return refuse(res, f.refused, 'The user does not have sufficient permissions for this file.');
        if (Buffer.byteLength(f.content) > state.exportLimitBytes)
          return refuse(res, 'exportSizeLimitExceeded', 'This file is too large to be exported.');
        res.setHeader('content-type', url.searchParams.get('mimeType') ?? 'text/plain');
        return res.end(f.content);
      }
      if (url.searchParams.get('alt') === 'media') {
        if (f.mimeType.startsWith('application/vnd.google-apps.'))
          return refuse(res, 'fileNotDownloadable', 'Only files with binary content can be downloaded.');
        if (f.refused) return refuse(res, f.refused, 'This file cannot be downloaded.');
        res.setHeader('content-type', f.mimeType);
        return res.end(f.content);
      }
      if (!file[2] && req.method === 'GET')
        return json(res, 200, metadata(f, url.searchParams.get('fields') ?? ''));
    }
    if (path === '/admin/directory/v1/groups') {
      if (!grant.scope.includes('admin.directory'))
        return json(res, 403, { error: { code: 403, message: 'Not Authorized' } });
      const { slice, nextPageToken } = page([...state.groups.keys()]);
      return json(res, 200, {
        groups: slice.map((email) => ({ email })),
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    }
    const members = /^\/admin\/directory\/v1\/groups\/([^/]+)\/members$/.exec(path);
    if (members) {
      const list = state.groups.get(decodeURIComponent(members[1] as string));
      if (!list) return json(res, 404, { error: { code: 404, message: 'Resource Not Found: groupKey' } });
      const { slice, nextPageToken } = page(list);
      return json(res, 200, {
        members: slice.map((email) => ({ email, type: 'USER' })),
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    }
    return json(res, 404, { error: { code: 404, message: 'Not Found' } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;
  return Object.assign(state, {
    url: origin,
    tokenUri: `${origin}/token`,
    serviceAccountKey: {
      type: 'service_account',
      project_id: 'kas-test',
      private_key_id: 'key-1',
      private_key: pem,
      client_email: serviceAccountEmail,
      client_id: '1234567890',
      token_uri: `${origin}/token`,
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  }) as FakeGoogle;
}
