import type { Actor } from '../../auth/roles.ts';
import { loadScope, policy, type Scope } from '../../auth/scope.ts';
import { AppError } from '../../errors.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import type {
  ConnectorCreateInput,
  ConnectorSnapshot,
  ConnectorUpdateInput,
  RunOnceInput,
  StatusResponse,
} from '../connectors.schemas.ts';
import * as connectorFilesRepository from '../files.repository.ts';
import type { ConfigProblem } from '../sources/source.ts';
import { applyBinding, checkSecretOrigins, linksOf, type PendingBinding } from './secret-origins.ts';
import {
  checkGroups,
  connectorNotFound,
  connectorSnapshot,
  type Deps,
  invalidConfig,
  sourceOf,
} from './shared.ts';

const MIN_REFRESH = 60;
const MIN_PRUNE = 300;

/** Checks a whole connector configuration and reports every problem at once (400). */
function validateConnector(ctx: Deps, input: ConnectorCreateInput): Record<string, unknown> {
  const problems: ConfigProblem[] = [];
  const source = ctx.sources.get(input.source);
  let config: Record<string, unknown> = input.connector_specific_config;
  if (!source) {
    problems.push({
      key: 'source',
      message: `unknown source "${input.source}"; known: ${ctx.sources.names().join(', ') || 'none'}`,
    });
  } else {
    const checked = source.validateConfig(input.connector_specific_config);
    if (checked.ok) config = input.connector_specific_config;
    else problems.push(...checked.problems.map((p) => ({ ...p, key: `connector_specific_config.${p.key}` })));
    if (!source.inputTypes.includes(input.input_type)) {
      problems.push({
        key: 'input_type',
        message: `${input.source} supports ${source.inputTypes.join(', ')}, not ${input.input_type}`,
      });
    }
  }
  if (input.refresh_freq !== null && input.refresh_freq !== undefined && input.refresh_freq < MIN_REFRESH) {
    problems.push({
      key: 'refresh_freq',
      message: `must be at least ${MIN_REFRESH} seconds, or null to index once`,
    });
  }
  if (input.prune_freq !== null && input.prune_freq !== undefined && input.prune_freq < MIN_PRUNE) {
    problems.push({ key: 'prune_freq', message: `must be at least ${MIN_PRUNE} seconds, or null` });
  }
  if (problems.length) throw invalidConfig('Invalid connector configuration', problems);
  return config;
}

/** Every upload a `file` connector's configuration names, as written. */
function namedUploads(config: Record<string, unknown>): string[] {
  const named = Array.isArray(config.file_locations)
    ? config.file_locations.filter((v): v is string => typeof v === 'string')
    : [];
  if (typeof config.zip_metadata_file_id === 'string') named.push(config.zip_metadata_file_id);
  return named;
}

/**
 * A `file` connector may name only uploads the actor may use (their own; admins any), besides those
 * its configuration already names. Another's upload answers exactly like an absent one.
 */
async function checkUploads(
  ctx: Deps,
  scope: Scope,
  source: string,
  config: Record<string, unknown>,
  kept: readonly string[] = [],
) {
  if (source !== 'file') return;
  const keep = new Set(kept.map((id) => id.toLowerCase()));
  const wanted = [...new Set(namedUploads(config))].filter((id) => !keep.has(id.toLowerCase()));
  if (!wanted.length) return;
  const usable = new Set(
    (await connectorFilesRepository.findUploadOwners(ctx.db, wanted))
      .filter((upload) => policy.useUpload(scope, upload))
      .map((upload) => upload.id.toLowerCase()),
  );
  const missing = wanted.filter((id) => !usable.has(id.toLowerCase()));
  if (missing.length)
    throw invalidConfig(
      'Invalid connector configuration',
      missing.map((id) => ({ key: 'connector_specific_config', message: `uploaded file ${id} not found` })),
    );
}

/** The connector, when the actor manages it; otherwise the same 404 as for an absent id. */
async function loadManageable(ctx: Deps, actor: Actor, id: number) {
  const connector = await connectorsRepository.findConnector(ctx.db, id);
  const scope = await loadScope(ctx.db, actor);
  if (!connector || connector.is_system || !policy.manageConnector(scope, connector))
    throw connectorNotFound(id);
  return { connector, scope };
}

export async function createConnector({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: ConnectorCreateInput;
}): Promise<{ id: number }> {
  const { actor } = ctx;
  const config = validateConnector(ctx, input);
  const scope = await loadScope(ctx.db, actor);
  if (!scope.admin && input.groups) await checkGroups(ctx.db, input.groups, scope, 'connectors');
  await checkUploads(ctx, scope, input.source, config);
  const id = await connectorsRepository.insertConnector(ctx.db, {
    name: input.name,
    source: input.source,
    input_type: input.input_type,
    connector_specific_config: config,
    refresh_freq: input.refresh_freq ?? null,
    prune_freq: input.prune_freq ?? null,
    indexing_start: input.indexing_start ?? null,
    access_type: input.access_type,
    creator_id: actor.user_id,
  });
  return { id };
}

export async function listConnectors({
  ctx,
  credential,
}: {
  ctx: Deps & { actor: Actor };
  credential?: number | undefined;
}): Promise<ConnectorSnapshot[]> {
  const { actor } = ctx;
  const scope = await loadScope(ctx.db, actor);
  const rows = await connectorsRepository.listConnectors(ctx.db, { credentialId: credential });
  return rows.filter((row) => policy.manageConnector(scope, row)).map(connectorSnapshot);
}

export async function getConnector({ ctx, actor, id }: { ctx: Deps; actor: Actor; id: number }) {
  const { connector } = await loadManageable(ctx, actor, id);
  return connectorSnapshot(connector);
}

export async function updateConnector({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: ConnectorUpdateInput;
}): Promise<ConnectorSnapshot> {
  const { actor } = ctx;
  const { connector, scope } = await loadManageable(ctx, actor, input.connector_id);
  const merged: ConnectorCreateInput = {
    name: input.name ?? connector.name,
    source: input.source ?? connector.source,
    input_type: input.input_type ?? (connector.input_type as ConnectorCreateInput['input_type']),
    connector_specific_config: input.connector_specific_config ?? connector.connector_specific_config,
    access_type: input.access_type ?? connector.access_type,
    refresh_freq: input.refresh_freq === undefined ? connector.refresh_freq : input.refresh_freq,
    prune_freq: input.prune_freq === undefined ? connector.prune_freq : input.prune_freq,
    indexing_start: input.indexing_start === undefined ? connector.indexing_start : input.indexing_start,
  };
  if (merged.source !== connector.source && connector.credential_ids.length) {
    throw new AppError('INVALID_INPUT', 'The source of a connector linked to credentials cannot change');
  }
  const config = validateConnector(ctx, merged);
  await checkUploads(
    ctx,
    scope,
    merged.source,
    config,
    connector.source === 'file' ? namedUploads(connector.connector_specific_config) : [],
  );
  // Each linked credential's secrets may go only where they are bound (see secret-origins.ts).
  const bindings: PendingBinding[] = [];
  for (const credentialId of connector.credential_ids) {
    const credential = await connectorsRepository.findCredential(ctx.db, credentialId);
    if (!credential) continue;
    const links = await linksOf(ctx, credentialId, { connector_id: connector.id, config });
    const binding = await checkSecretOrigins(ctx, { actor, credential, links });
    if (binding) bindings.push(binding);
  }
  await connectorsRepository.updateConnector(ctx.db, connector.id, {
    name: merged.name,
    source: merged.source,
    input_type: merged.input_type,
    connector_specific_config: config,
    refresh_freq: merged.refresh_freq ?? null,
    prune_freq: merged.prune_freq ?? null,
    indexing_start: merged.indexing_start ?? null,
    access_type: merged.access_type,
  });
  for (const binding of bindings) await applyBinding(ctx, binding);
  const updated = await connectorsRepository.findConnector(ctx.db, connector.id);
  if (!updated) throw connectorNotFound(connector.id);
  return connectorSnapshot(updated);
}

/** Deletes a connector with no CC pairs left (400 otherwise: delete its pairs first). */
export async function deleteConnector({
  ctx,
  id,
}: {
  ctx: Deps & { actor: Actor };
  id: number;
}): Promise<void> {
  const { actor } = ctx;
  const { connector } = await loadManageable(ctx, actor, id);
  if (connector.credential_ids.length) {
    throw new AppError(
      'INVALID_INPUT',
      `Connector is not deletable: it is still linked to credential ${connector.credential_ids.join(', ')}; delete those CC pairs first`,
    );
  }
  await connectorsRepository.deleteConnector(ctx.db, id);
  // Its uploads go with it (unless another connector names them too).
  await connectorFilesRepository.deleteUnreferencedFiles(ctx.db, {
    ids: connectorFilesRepository.filesOfConfig(connector.connector_specific_config),
  });
}

/** Queues an immediate run of the connector's pairs (all linked credentials by default). */
export async function runOnce({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: RunOnceInput;
}): Promise<StatusResponse> {
  const { actor } = ctx;
  const connector = await connectorsRepository.findConnector(ctx.db, input.connector_id);
  const scope = await loadScope(ctx.db, actor);
  if (!connector || connector.is_system) throw connectorNotFound(input.connector_id);
  // Pairs the actor does not manage are as if they were not linked.
  const pairs = (await connectorsRepository.listPairs(ctx.db, { connectorId: connector.id })).filter((p) =>
    policy.manageCcPair(scope, p),
  );
  if (!pairs.length && !policy.manageConnector(scope, connector)) throw connectorNotFound(connector.id);
  sourceOf(ctx, connector.source);
  const wanted = input.credential_ids ?? pairs.map((p) => p.credential_id);
  if (!wanted.length) throw new AppError('INVALID_INPUT', 'The connector is not linked to any credential');
  const unlinked = wanted.filter((id) => !pairs.some((p) => p.credential_id === id));
  if (unlinked.length) {
    throw new AppError(
      'INVALID_INPUT',
      `Credential ${unlinked.join(', ')} is not linked to connector ${connector.id}`,
    );
  }
  const chosen = pairs.filter((p) => wanted.includes(p.credential_id));
  const runnable = chosen.filter((p) => p.status !== 'paused' && p.status !== 'deleting');
  for (const pair of runnable)
    await connectorsRepository.queueAttempt(ctx.db, pair.id, input.from_beginning, input.from_beginning);
  const skipped = chosen.length - runnable.length;
  return {
    success: runnable.length > 0,
    message: runnable.length
      ? `Queued ${runnable.length} run${runnable.length > 1 ? 's' : ''}${input.from_beginning ? ' from the beginning' : ''}${skipped ? `; ${skipped} paused or deleting pair(s) skipped` : ''}`
      : 'Nothing queued: every selected CC pair is paused or being deleted',
    data: runnable.length,
  };
}
