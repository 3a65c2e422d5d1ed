import { curatesAll, type Scope } from '../../auth/scope.ts';
import type { ServiceContext } from '../../context.ts';
import type { DbExecutor } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import { extractLimitsOf } from '../../files/files.parse.ts';
import * as userGroupsRepository from '../../user-groups/user-groups.repository.ts';
import type { AttemptRow, ConnectorRow, CredentialRow } from '../connectors.repository.ts';
import type {
  ConnectorSnapshot,
  CredentialSnapshot,
  IndexAttempt,
  IndexingProgress,
} from '../connectors.schemas.ts';
import type { AnySource, ConfigProblem, SourceExtractor } from '../sources/source.ts';

export type Deps = ServiceContext<
  'db' | 'search' | 'logger' | 'ingestion' | 'secrets' | 'sources' | 'outbound' | 'cpu' | 'config' | 'dbKind'
>;

/** How sources parse files and pages: in the CPU pool, within the configured limits, stopped with the run. */
export function sourceExtractor(ctx: ServiceContext<'cpu' | 'config'>, signal: AbortSignal): SourceExtractor {
  const limits = extractLimitsOf(ctx.config);
  return {
    text: (file) => ctx.cpu.run('extractText', { ...file, limits }, { signal, subject: `"${file.name}"` }),
    html: (subject, html) => ctx.cpu.run('extractHtml', { subject, html, limits }, { signal, subject }),
  };
}

export const MASK = '********';

export function connectorNotFound(id: number): AppError {
  return new AppError('CONNECTOR_NOT_FOUND', `Connector ${id} not found`);
}
export function pairNotFound(id: number): AppError {
  return new AppError('CC_PAIR_NOT_FOUND', `CC pair ${id} not found`);
}
export function credentialNotFound(id: number): AppError {
  return new AppError('CREDENTIAL_NOT_FOUND', `Credential ${id} not found`);
}
export function forbidden(what: string): AppError {
  return new AppError(
    'INSUFFICIENT_PERMISSIONS',
    `Curators manage only ${what} attached to groups they curate`,
  );
}

export function invalidConfig(prefix: string, problems: ConfigProblem[]): AppError {
  const list = problems.map((p) => `${p.key}: ${p.message}`).join('; ');
  return new AppError('INVALID_INPUT', `${prefix}: ${list}`);
}

/** The source of that name, or a 400 naming the known ones. */
export function sourceOf(ctx: Pick<Deps, 'sources'>, name: string): AnySource {
  const source = ctx.sources.get(name);
  if (!source) {
    throw invalidConfig('Invalid connector configuration', [
      {
        key: 'source',
        message: `unknown source "${name}"; known: ${ctx.sources.names().join(', ') || 'none'}`,
      },
    ]);
  }
  return source;
}

/**
 * Everyone must name existing groups; curators only groups they curate, and at least one unless
 * `optional` (a credential without groups is its owner's).
 */
export async function checkGroups(
  db: DbExecutor,
  groups: number[],
  scope: Scope,
  what: string,
  options: { optional?: boolean } = {},
) {
  const unique = [...new Set(groups)];
  const found = new Set(await userGroupsRepository.findExistingGroupIds(db, unique));
  const missing = unique.filter((id) => !found.has(id));
  if (missing.length) throw new AppError('INVALID_INPUT', `User group ${missing.join(', ')} does not exist`);
  if (options.optional && unique.length === 0) return;
  if (!curatesAll(scope, unique)) throw forbidden(`${what}`);
}

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

export function connectorSnapshot(row: ConnectorRow): ConnectorSnapshot {
  return {
    id: row.id,
    name: row.name,
    source: row.source,
    input_type: row.input_type,
    connector_specific_config: row.connector_specific_config,
    refresh_freq: row.refresh_freq,
    prune_freq: row.prune_freq,
    indexing_start: iso(row.indexing_start),
    access_type: row.access_type,
    credential_ids: row.credential_ids,
    time_created: iso(row.time_created) as string,
    time_updated: iso(row.time_updated) as string,
  };
}

/** Decrypts a stored credential_json (empty for credentials stored without one). */
export function openCredential(ctx: Pick<Deps, 'secrets'>, row: CredentialRow): Record<string, unknown> {
  if (!row.credential_json) return {};
  return JSON.parse(ctx.secrets.decrypt(row.credential_json)) as Record<string, unknown>;
}

export function credentialSnapshot(
  ctx: Pick<Deps, 'secrets' | 'sources'>,
  row: CredentialRow,
): CredentialSnapshot {
  const plain = openCredential(ctx, row);
  const visible = new Set(ctx.sources.get(row.source)?.publicCredentialKeys ?? []);
  const masked = Object.fromEntries(Object.entries(plain).map(([k, v]) => [k, visible.has(k) ? v : MASK]));
  return {
    id: row.id,
    name: row.name,
    source: row.source,
    credential_json: masked,
    admin_public: row.admin_public,
    curator_public: row.curator_public,
    groups: row.groups,
    user_id: row.user_id,
    time_created: iso(row.time_created) as string,
    time_updated: iso(row.time_updated) as string,
  };
}

/**
 * Progress of an attempt: the rate counts only the time it ran (a wait for a rate limit, a pause or
 * the queue excluded), over the documents it indexed itself; the ETA is the rest of the run at that rate.
 */
export function progressOf(row: AttemptRow, now = Date.now()): IndexingProgress {
  const current =
    row.status === 'in_progress' && row.run_started_at ? now - new Date(row.run_started_at).getTime() : 0;
  const activeMs = Number(row.active_ms) + Math.max(0, current);
  const rate = activeMs > 0 && row.docs_done > 0 ? row.docs_done / (activeMs / 1000) : null;
  const done = row.docs_resumed + row.docs_done;
  const open = row.status === 'in_progress' || row.status === 'not_started';
  const eta = rate && row.docs_total !== null && open ? Math.max(0, (row.docs_total - done) / rate) : null;
  const waiting = row.status === 'not_started' && row.resume_at ? row.resume_at : null;
  return {
    docs_done: done,
    docs_total: row.docs_total,
    docs_per_second: rate === null ? null : Math.round(rate * 100) / 100,
    eta_seconds: eta === null ? null : Math.round(eta),
    waiting_until: iso(waiting),
    waiting_reason: waiting ? row.waiting_reason : null,
  };
}

export function attemptSnapshot(row: AttemptRow): IndexAttempt {
  return {
    id: row.id,
    cc_pair_id: row.cc_pair_id,
    status: row.status,
    from_beginning: row.from_beginning,
    new_docs_indexed: row.new_docs_indexed,
    total_docs_indexed: row.docs_done,
    docs_removed_from_index: row.docs_removed,
    error_msg: row.error_msg,
    error_count: row.error_count,
    progress: progressOf(row),
    time_started: iso(row.time_started),
    time_updated: iso(row.time_updated) as string,
    poll_range_start: iso(row.poll_range_start),
    poll_range_end: iso(row.poll_range_end),
    resumed_from: row.resumed_from,
  };
}

export { iso };
