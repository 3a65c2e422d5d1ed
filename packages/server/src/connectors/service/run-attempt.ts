import { outsideBackground } from '../../db/database.ts';
import type { IngestedDocument } from '../../documents/documents.schemas.ts';
import * as documentsService from '../../documents/documents.service.ts';
import { AppError } from '../../errors.ts';
import { OutboundError } from '../../outbound/outbound.ts';
import type { AttemptRow } from '../connectors.repository.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import * as indexingRepository from '../indexing.repository.ts';
import type { IndexingState } from '../indexing-state.ts';
import {
  RateLimitedError,
  type SourceDocument,
  SourceError,
  type SourceFileStore,
} from '../sources/source.ts';
import { assertRunTargets } from './secret-origins.ts';
import { type Deps, openCredential, sourceExtractor } from './shared.ts';
import { principalsOf, prunePair, removeVanished, syncExternalGroups, syncPermissions } from './sync.ts';

export interface IndexingOptions {
  heartbeatMs: number;
  /** Consecutive failures after which a pair is in a repeated error state. */
  repeatedAfter: number;
  /** Backoff after the first failure; doubled per further failure, capped at an hour. */
  backoffBaseMs: number;
  files: SourceFileStore;
  /** Most pages one crawl takes (`KAS_WEB_MAX_PAGES`). */
  maxPages?: number;
}

const POLL_OVERLAP_MS = 5 * 60_000;
const MAX_BACKOFF_MS = 60 * 60_000;

export function toIngested(doc: SourceDocument, source: string): IngestedDocument {
  return {
    id: doc.id,
    semantic_identifier: doc.semantic_identifier,
    title: doc.title ?? null,
    sections: doc.sections.length ? doc.sections : [{ text: '', link: null }],
    source,
    metadata: doc.metadata ?? null,
    doc_updated_at: doc.doc_updated_at ?? null,
    primary_owners: doc.primary_owners ?? null,
    secondary_owners: doc.secondary_owners ?? null,
  };
}

function reasonOf(error: unknown): string {
  if (error instanceof SourceError) return error.message;
  if (error instanceof OutboundError) return error.message;
  return 'The connector failed unexpectedly (see the server log)';
}

type Ctx = Deps & { indexing: IndexingState };

/** A pair with its connector, source and validated configuration and credential (a run's inputs). */
async function openPair(ctx: Deps, pairId: number) {
  const pair = await connectorsRepository.findPair(ctx.db, pairId);
  const connector = pair && (await connectorsRepository.findConnector(ctx.db, pair.connector_id));
  const credential = pair && (await connectorsRepository.findCredential(ctx.db, pair.credential_id));
  if (!pair || !connector || !credential) return null;
  const source = ctx.sources.get(connector.source);
  if (!source) throw new SourceError('config', `Unknown source "${connector.source}"`);
  const config = source.validateConfig(connector.connector_specific_config);
  const secret = source.validateCredential(openCredential(ctx, credential));
  if (!config.ok || !secret.ok) {
    const problems = [...(config.ok ? [] : config.problems), ...(secret.ok ? [] : secret.problems)];
    throw new SourceError(
      'config',
      `Invalid configuration: ${problems.map((p) => `${p.key}: ${p.message}`).join('; ')}`,
    );
  }
  await assertRunTargets(ctx, credential.id, source, config.value, secret.value);
  return { pair, connector, source, config: config.value as unknown, secret: secret.value as unknown };
}

/**
 * A prune run of a pair (`prune_freq`, claimed by the scheduler): the source lists its current ids and
 * the pair's documents that vanished are removed. Sources without a listing are pruned by full runs.
 */
export async function runPrune(ctx: Ctx, pairId: number, options: IndexingOptions, stop: AbortSignal) {
  const log = ctx.logger.child({ cc_pair_id: pairId });
  const controller = new AbortController();
  const onStop = () => controller.abort();
  stop.addEventListener('abort', onStop, { once: true });
  ctx.indexing.running.set(-pairId, { pairId, controller });
  try {
    const opened = await openPair(ctx, pairId);
    if (!opened?.source.listIds) return;
    const { connector, source, config, secret } = opened;
    const removed = await prunePair(ctx, pairId, source, {
      config,
      credential: secret,
      fetch: ctx.outbound.fetch,
      signal: controller.signal,
      logger: log,
      files: options.files,
      extract: sourceExtractor(ctx, controller.signal),
      connectorId: connector.id,
      ...(options.maxPages ? { maxPages: options.maxPages } : {}),
      accessType: opened.pair.access_type,
    });
    if (removed !== null) log.info({ removed }, 'prune finished');
  } catch (error) {
    log.warn({ err: error }, `prune failed: ${reasonOf(error)}; retried at the next prune interval`);
  } finally {
    stop.removeEventListener('abort', onStop);
    ctx.indexing.running.delete(-pairId);
  }
}

/**
 * Runs one claimed attempt: streams the source's batches from the stored checkpoint through the
 * ingestion path, saving progress and the checkpoint after each batch; heartbeats let a pause or a
 * deletion stop it within a heartbeat and let another worker resume it if this one dies.
 */
export async function runAttempt(
  ctx: Ctx,
  claimed: AttemptRow,
  options: IndexingOptions,
  stop: AbortSignal,
): Promise<void> {
  const { workerId } = ctx.indexing;
  const controller = new AbortController();
  // Registered before the first await so the scheduler counts it against the concurrency at once.
  ctx.indexing.running.set(claimed.id, { pairId: claimed.cc_pair_id, controller });
  const onStop = () => controller.abort();
  stop.addEventListener('abort', onStop, { once: true });
  let attempt = claimed;
  // Heartbeats never wait behind the worker's own bulk statements (see `outsideBackground`).
  const beat = setInterval(() => {
    outsideBackground(() => indexingRepository.heartbeat(ctx.db, attempt.id, workerId))
      .then((status) => {
        if (status === null || status === 'paused' || status === 'deleting') controller.abort();
      })
      .catch(() => {});
  }, options.heartbeatMs);
  const log = ctx.logger.child({ cc_pair_id: attempt.cc_pair_id, index_attempt_id: attempt.id });
  try {
    attempt = await indexingRepository.continueFailedAttempt(ctx.db, claimed);
    const opened = await openPair(ctx, attempt.cc_pair_id);
    if (!opened) return;
    const { pair, connector, source, config, secret } = opened;
    await indexingRepository.markPairStarted(ctx.db, pair.id);
    const fullRun =
      source.fullListing ||
      attempt.from_beginning ||
      connector.input_type === 'load_state' ||
      !pair.last_successful_index_time;
    // After a run that ended with per-item errors, a source that reads items by id retries only the
    // failed ones and the window moves on from that run's end; otherwise it reads again from its start.
    const previous = fullRun ? undefined : await indexingRepository.lastCompletedAttempt(ctx.db, pair.id);
    let retry: string[] = [];
    let lastEnd: Date | null = previous?.poll_range_end ?? null;
    if (previous?.status === 'completed_with_errors') {
      const failed = source.loadItems
        ? await connectorsRepository.failedItems(ctx.db, previous.id)
        : { documentIds: [], unnamed: true };
      if (failed.unnamed) lastEnd = previous.poll_range_start;
      else retry = failed.documentIds;
    }
    const start = lastEnd
      ? new Date(lastEnd.getTime() - POLL_OVERLAP_MS)
      : connector.indexing_start
        ? new Date(connector.indexing_start)
        : null;
    const end = attempt.poll_range_end ? new Date(attempt.poll_range_end) : new Date();
    // Pruning needs every id of a complete listing in this process; a resumed run does not prune.
    const seen = fullRun && attempt.checkpoint === null ? new Set<string>() : null;
    const runContext = {
      config,
      credential: secret,
      fetch: ctx.outbound.fetch,
      signal: controller.signal,
      logger: log,
      files: options.files,
      extract: sourceExtractor(ctx, controller.signal),
      connectorId: connector.id,
      ...(options.maxPages ? { maxPages: options.maxPages } : {}),
      accessType: pair.access_type,
    };
    const sync = pair.access_type === 'sync';
    if (sync && source.externalGroups) {
      await syncExternalGroups(ctx, pair.id, connector.source, await source.externalGroups(runContext));
    }
    let done = attempt.docs_resumed + attempt.docs_done;
    let errors = 0;
    log.info(
      { source: connector.source, resumed: attempt.checkpoint !== null, resumed_from: attempt.resumed_from },
      'index attempt started',
    );
    const loaded = source.load({
      ...runContext,
      checkpoint: (attempt.checkpoint ?? null) as never,
      window: { start, end },
    });
    // The retried items come first, once: a resumed attempt (with a checkpoint) has read them already.
    const retried =
      retry.length && attempt.checkpoint === null ? source.loadItems?.(runContext, retry) : null;
    if (retried) log.info({ items: retry.length }, 'retrying the items the last run failed on');
    async function* batches() {
      if (retried) yield* retried;
      yield* loaded;
    }
    for await (const batch of batches()) {
      if (controller.signal.aborted) break;
      const results = await documentsService.ingestMany({
        ctx,
        documents: batch.documents.map((doc) => ({
          document: toIngested(doc, connector.source),
          externalAccess: sync ? principalsOf(connector.source, doc.external_access) : null,
        })),
        ccPairId: pair.id,
        fromConnector: true,
      });
      const failures = [
        ...(batch.failures ?? []).map((f) => ({
          document_id: f.document_id,
          document_link: f.link ?? null,
          failure_message: f.message,
        })),
        ...results.flatMap((r, i) =>
          r.status === 'rejected'
            ? [
                {
                  document_id: batch.documents[i]?.id ?? null,
                  document_link: batch.documents[i]?.sections.find((section) => section.link)?.link ?? null,
                  // An AppError's detail is written for API consumers (a size limit, an unreadable file).
                  failure_message:
                    r.reason instanceof AppError
                      ? `Could not index the document: ${r.reason.detail}`
                      : 'Could not index the document',
                },
              ]
            : [],
        ),
      ];
      for (const doc of batch.documents) seen?.add(doc.id);
      // A page that failed this time is not a deleted page.
      for (const failure of batch.failures ?? [])
        if (failure.document_id && !failure.gone) seen?.add(failure.document_id);
      const created = results.filter((r) => r.status === 'fulfilled' && !r.value.already_existed).length;
      const indexed = results.filter((r) => r.status === 'fulfilled').length;
      if (failures.length)
        await connectorsRepository.insertAttemptErrors(ctx.db, attempt.id, pair.id, failures);
      errors += failures.length;
      done += indexed;
      const mine = await indexingRepository.saveProgress(ctx.db, attempt.id, workerId, {
        checkpoint: batch.checkpoint,
        done: indexed,
        total: batch.total ?? null,
        created,
        errors: failures.length,
        poll_range_start: start,
      });
      if (!mine) return;
      log.info({ docs_done: done, docs_total: batch.total ?? null }, 'index attempt progress');
    }
    if (controller.signal.aborted) {
      await indexingRepository.releaseAttempt(ctx.db, attempt.id, workerId);
      log.info({ docs_done: done }, 'index attempt handed back (paused, deleted or worker stopping)');
      return;
    }
    // A poll reads only changed documents: permissions of the others are synced on their own.
    if (sync && !fullRun) {
      const changed = await syncPermissions(ctx, pair.id, connector.source, source, runContext);
      if (changed) log.info({ documents: changed }, 'permissions synced');
    }
    let removed = 0;
    if (seen) {
      const vanished = (await indexingRepository.pairDocumentIds(ctx.db, pair.id)).filter(
        (id) => !seen.has(id),
      );
      removed = await removeVanished(ctx, pair.id, vanished);
    }
    const finished = await indexingRepository.finishAttempt(ctx.db, attempt.id, workerId, {
      status: errors ? 'completed_with_errors' : 'success',
      error_msg: errors ? `${errors} document(s) could not be indexed` : null,
      removed,
    });
    if (finished) await indexingRepository.markPairSucceeded(ctx.db, pair.id, end, seen !== null);
    log.info({ docs_done: done, errors, removed }, 'index attempt finished');
  } catch (error) {
    if (controller.signal.aborted && !(error instanceof SourceError)) {
      await indexingRepository.releaseAttempt(ctx.db, attempt.id, workerId).catch(() => {});
      return;
    }
    const reason = reasonOf(error);
    if (error instanceof SourceError && error.kind === 'rate_limited') {
      // Not a failure: the attempt waits in the queue with its checkpoint and the worker moves on.
      const until = new Date(
        error instanceof RateLimitedError
          ? error.untilMs
          : Date.now() + (error.retryAfterMs ?? options.backoffBaseMs),
      );
      const waiting = await indexingRepository
        .waitAttempt(ctx.db, attempt.id, workerId, until, reason)
        .catch(() => false);
      if (waiting) {
        log.info({ resume_at: until.toISOString() }, `index attempt rate limited: ${reason}; resumes then`);
        return;
      }
    }
    log.warn({ err: error }, `index attempt failed: ${reason}`);
    const finished = await indexingRepository
      .finishAttempt(ctx.db, attempt.id, workerId, { status: 'failed', error_msg: reason, removed: 0 })
      .catch(() => false);
    if (finished) {
      const failures = await indexingRepository.markPairFailed(
        ctx.db,
        attempt.cc_pair_id,
        new Date(),
        options.repeatedAfter,
      );
      const asked = error instanceof SourceError ? error.retryAfterMs : null;
      const backoff = Math.min(MAX_BACKOFF_MS, options.backoffBaseMs * 2 ** Math.max(0, failures - 1));
      await indexingRepository.setRetryAfter(
        ctx.db,
        attempt.cc_pair_id,
        new Date(Date.now() + Math.max(asked ?? 0, backoff)),
      );
    }
  } finally {
    clearInterval(beat);
    stop.removeEventListener('abort', onStop);
    ctx.indexing.running.delete(attempt.id);
  }
}
