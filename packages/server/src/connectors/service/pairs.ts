import type { Actor } from '../../auth/roles.ts';
import { loadScope, policy } from '../../auth/scope.ts';
import { inOneSnapshot } from '../../db/database.ts';
import * as documentsRepository from '../../documents/documents.repository.ts';
import * as documentsService from '../../documents/documents.service.ts';
import { AppError } from '../../errors.ts';
import type { AttemptRow, PairRow } from '../connectors.repository.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import type {
  CcPairCreateInput,
  CcPairDetails,
  IndexingStatusEntry,
  PageInput,
  StatusResponse,
} from '../connectors.schemas.ts';
import * as eventsRepository from '../events.repository.ts';
import * as connectorFilesRepository from '../files.repository.ts';
import { applyBinding, checkSecretOrigins, linksOf } from './secret-origins.ts';
import {
  attemptSnapshot,
  checkGroups,
  connectorNotFound,
  connectorSnapshot,
  credentialNotFound,
  credentialSnapshot,
  type Deps,
  iso,
  pairNotFound,
  progressOf,
} from './shared.ts';

/** The pair, when the actor manages it; otherwise the same 404 as for an absent id. */
async function loadPair(
  ctx: Deps,
  actor: Actor,
  id: number,
  notFound: () => AppError = () => pairNotFound(id),
): Promise<PairRow> {
  const pair = await connectorsRepository.findPair(ctx.db, id);
  if (!pair || !policy.manageCcPair(await loadScope(ctx.db, actor), pair)) throw notFound();
  return pair;
}

/** Links a connector to a credential: a CC pair, scheduled for its first run. */
export async function createPair({
  ctx,
  input,
}: {
  ctx: Deps & { actor: Actor };
  input: CcPairCreateInput;
}): Promise<StatusResponse> {
  const { actor } = ctx;
  const scope = await loadScope(ctx.db, actor);
  const connector = await connectorsRepository.findConnector(ctx.db, input.connector_id);
  if (!connector || connector.is_system || !policy.manageConnector(scope, connector))
    throw connectorNotFound(input.connector_id);
  const credential = await connectorsRepository.findCredential(ctx.db, input.credential_id);
  if (!credential || !policy.manageCredential(scope, credential))
    throw credentialNotFound(input.credential_id);
  if (credential.source !== connector.source) {
    throw new AppError(
      'INVALID_INPUT',
      `Credential ${credential.id} is for ${credential.source}, connector ${connector.id} is ${connector.source}`,
    );
  }
  await checkGroups(ctx.db, input.groups, scope, 'CC pairs');
  if (await connectorsRepository.findPairOf(ctx.db, connector.id, credential.id)) {
    throw new AppError(
      'INVALID_INPUT',
      `Connector ${connector.id} is already linked to credential ${credential.id}`,
    );
  }
  if (await connectorsRepository.pairNameTaken(ctx.db, input.name)) {
    throw new AppError('INVALID_INPUT', `Name must be unique: a CC pair named "${input.name}" exists`);
  }
  const binding = await checkSecretOrigins(ctx, {
    actor,
    credential,
    links: await linksOf(ctx, credential.id, {
      connector_id: connector.id,
      config: connector.connector_specific_config,
    }),
  });
  const id = await ctx.db.transaction().execute(async (trx) => {
    const id = await connectorsRepository.insertPair(trx, {
      name: input.name,
      connector_id: connector.id,
      credential_id: credential.id,
      access_type: input.access_type,
      creator_id: actor.user_id,
    });
    await documentsRepository.setCcPairGroups(trx, id, [...new Set(input.groups)]);
    await applyBinding({ ...ctx, db: trx }, binding);
    await connectorsRepository.queueAttempt(trx, id, true);
    return id;
  });
  return {
    success: true,
    message: `Linked connector ${connector.id} to credential ${credential.id}`,
    data: id,
  };
}

/** A queued attempt waiting out a rate limit (it resumes from its checkpoint at `resume_at`). */
function isWaiting(attempt: AttemptRow): boolean {
  return attempt.status === 'not_started' && attempt.resume_at !== null;
}

export async function getPairDetails({
  ctx,
  id,
}: {
  ctx: Deps & { actor: Actor };
  id: number;
}): Promise<CcPairDetails> {
  // One snapshot: read statement by statement, an attempt finishing between them showed the pair as
  // not indexing with its last attempt still in progress and none of its documents counted (a client
  // waiting for the run to end took that for its end).
  return inOneSnapshot(ctx.db, (db) => pairDetails({ ...ctx, db }, id));
}

async function pairDetails(ctx: Deps & { actor: Actor }, id: number): Promise<CcPairDetails> {
  const { actor } = ctx;
  const pair = await loadPair(ctx, actor, id);
  const connector = await connectorsRepository.findConnector(ctx.db, pair.connector_id);
  const credential = await connectorsRepository.findCredential(ctx.db, pair.credential_id);
  if (!connector || !credential) throw pairNotFound(id);
  const latest = await connectorsRepository.latestAttempt(ctx.db, pair.id);
  const running = await connectorsRepository.runningAttempt(ctx.db, pair.id);
  const watched = running ?? (latest && isWaiting(latest) ? latest : undefined);
  const events = await eventsRepository.pairEventSummary(ctx.db, pair.id);
  return {
    id: pair.id,
    name: pair.name,
    status: pair.status,
    access_type: pair.access_type,
    num_docs_indexed: pair.num_docs_indexed,
    connector: connectorSnapshot(connector),
    credential: credentialSnapshot(ctx, credential),
    groups: pair.groups,
    number_of_index_attempts: pair.number_of_index_attempts,
    last_index_attempt_status: latest?.status ?? null,
    last_indexed: iso(pair.last_successful_index_time),
    last_pruned: iso(pair.last_pruned),
    indexing: Boolean(running),
    in_repeated_error_state: pair.in_repeated_error_state,
    deletion_failure_message: pair.deletion_failure,
    progress: watched ? progressOf(watched) : null,
    last_failure: await connectorsRepository.lastFailure(ctx.db, pair.id),
    events: { ...events, last_processed: iso(events.last_processed) },
  };
}

/**
 * `paused`: no attempt of the pair is claimed any more and a running one hands its attempt back
 * (checkpoint kept) at its next batch; `active`: the attempt continues from that checkpoint.
 */
export async function setPairStatus({
  ctx,
  id,
  status,
}: {
  ctx: Deps & { actor: Actor };
  id: number;
  status: 'active' | 'paused';
}): Promise<StatusResponse> {
  const { actor } = ctx;
  const pair = await loadPair(ctx, actor, id);
  if (pair.status === 'deleting') throw new AppError('INVALID_INPUT', `CC pair ${id} is being deleted`);
  const next = status === 'paused' ? 'paused' : pair.last_successful_index_time ? 'active' : 'scheduled';
  await connectorsRepository.setPairStatus(ctx.db, id, next);
  return { success: true, message: `CC pair ${id} is ${status}`, data: id };
}

export async function listAttempts({ ctx, input }: { ctx: Deps & { actor: Actor }; input: PageInput }) {
  const { actor } = ctx;
  await loadPair(ctx, actor, input.cc_pair_id);
  const page = await connectorsRepository.pageAttempts(
    ctx.db,
    input.cc_pair_id,
    input.page_num * input.page_size,
    input.page_size,
  );
  return { items: page.items.map(attemptSnapshot), total_items: page.total };
}

export async function listErrors({ ctx, input }: { ctx: Deps & { actor: Actor }; input: PageInput }) {
  const { actor } = ctx;
  await loadPair(ctx, actor, input.cc_pair_id);
  const page = await connectorsRepository.pageErrors(
    ctx.db,
    input.cc_pair_id,
    input.page_num * input.page_size,
    input.page_size,
  );
  return {
    items: page.items.map((e) => ({ ...e, time_created: iso(e.time_created) as string })),
    total_items: page.total,
  };
}

export async function indexingStatus({
  ctx,
}: {
  ctx: Deps & { actor: Actor };
}): Promise<IndexingStatusEntry[]> {
  // One snapshot, as for one pair's details: an attempt finishing between the statements would show
  // its pair as no longer indexing with the documents it indexed not yet counted.
  return inOneSnapshot(ctx.db, (db) => statusEntries({ ...ctx, db }));
}

async function statusEntries(ctx: Deps & { actor: Actor }): Promise<IndexingStatusEntry[]> {
  const { actor } = ctx;
  const scope = await loadScope(ctx.db, actor);
  const pairs = (await connectorsRepository.listPairs(ctx.db)).filter((p) => policy.manageCcPair(scope, p));
  const events = await eventsRepository.pairEventSummaries(
    ctx.db,
    pairs.map((p) => p.id),
  );
  const entries: IndexingStatusEntry[] = [];
  for (const pair of pairs) {
    const pairEvents = events.get(pair.id) ?? eventsRepository.emptyEventSummary();
    const latest = await connectorsRepository.latestAttempt(ctx.db, pair.id);
    const running = latest?.status === 'in_progress' ? latest : undefined;
    entries.push({
      cc_pair_id: pair.id,
      name: pair.name,
      source: pair.source,
      status: pair.status,
      connector_id: pair.connector_id,
      credential_id: pair.credential_id,
      num_docs_indexed: pair.num_docs_indexed,
      last_index_attempt_status: latest?.status ?? null,
      last_indexed: iso(pair.last_successful_index_time),
      indexing: Boolean(running),
      in_repeated_error_state: pair.in_repeated_error_state,
      progress: running || (latest && isWaiting(latest)) ? progressOf(latest as AttemptRow) : null,
      last_failure: await connectorsRepository.lastFailure(ctx.db, pair.id),
      events: { ...pairEvents, last_processed: iso(pairEvents.last_processed) },
    });
  }
  return entries;
}

/** Marks the pair `deleting`, cancels its attempts and removes it in the background. */
export async function startDeletion({
  ctx,
  connectorId,
  credentialId,
}: {
  ctx: Deps & { actor: Actor };
  connectorId: number;
  credentialId: number;
}): Promise<StatusResponse> {
  const { actor } = ctx;
  const notLinked = () =>
    new AppError('CC_PAIR_NOT_FOUND', `Connector ${connectorId} is not linked to credential ${credentialId}`);
  const found = await connectorsRepository.findPairOf(ctx.db, connectorId, credentialId);
  if (!found) throw notLinked();
  const pair = await loadPair(ctx, actor, found.id, notLinked);
  await ctx.db.transaction().execute(async (trx) => {
    await connectorsRepository.setPairStatus(trx, pair.id, 'deleting');
    await connectorsRepository.setDeletionFailure(trx, pair.id, null);
    await connectorsRepository.cancelOpenAttempts(trx, pair.id, 'CC pair deleted');
  });
  void processDeletion({ ctx, pairId: pair.id });
  return { success: true, message: `CC pair ${pair.id} is being deleted`, data: pair.id };
}

const DELETE_BATCH = 500;

/**
 * Removes a `deleting` pair: documents no other pair owns leave the index and the database, shared
 * ones lose this pair's access; then the pair, and its connector when no pair remains. A failure
 * is kept on the pair (shown in its details) and the scheduler retries it, so it is never stuck.
 */
export async function processDeletion({ ctx, pairId }: { ctx: Deps; pairId: number }): Promise<boolean> {
  try {
    const pair = await connectorsRepository.findPair(ctx.db, pairId);
    if (pair?.status !== 'deleting') return false;
    for (;;) {
      const ids = await connectorsRepository.documentsOnlyOwnedBy(ctx.db, pairId, DELETE_BATCH);
      if (!ids.length) break;
      await connectorsRepository.deleteDocuments(ctx.db, ids);
      await ctx.search.deleteDocuments(ids);
    }
    const shared = await connectorsRepository.sharedDocumentsOf(ctx.db, pairId);
    await connectorsRepository.deletePair(ctx.db, pairId);
    if (shared.length) {
      for (let i = 0; i < shared.length; i += DELETE_BATCH) {
        const batch = shared.slice(i, i + DELETE_BATCH);
        await documentsRepository.recomputeAccess(ctx.db, batch);
        if (ctx.search.kind !== 'postgres') await documentsService.syncIndex({ ctx, documentIds: batch });
      }
    }
    const connector = await connectorsRepository.findConnector(ctx.db, pair.connector_id);
    if (connector && !connector.is_system && connector.credential_ids.length === 0) {
      await connectorsRepository.deleteConnector(ctx.db, connector.id);
      await connectorFilesRepository.deleteUnreferencedFiles(ctx.db, {
        ids: connectorFilesRepository.filesOfConfig(connector.connector_specific_config),
      });
    }
    ctx.logger.info({ cc_pair_id: pairId }, 'CC pair deleted');
    return true;
  } catch (error) {
    ctx.logger.error({ err: error, cc_pair_id: pairId }, 'CC pair deletion failed; it will be retried');
    await connectorsRepository
      .setDeletionFailure(ctx.db, pairId, 'Deletion failed; it is retried automatically (see the server log)')
      .catch(() => {});
    return false;
  }
}
