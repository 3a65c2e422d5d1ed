import { outsideBackground } from '../../db/database.ts';
import * as documentsService from '../../documents/documents.service.ts';
import { AppError } from '../../errors.ts';
import { OutboundError } from '../../outbound/outbound.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import type { EventRow } from '../events.repository.ts';
import * as eventsRepository from '../events.repository.ts';
import * as connectorFilesRepository from '../files.repository.ts';
import * as indexingRepository from '../indexing.repository.ts';
import type { IndexingState } from '../indexing-state.ts';
import { SourceError } from '../sources/source.ts';
import type { ConnectorEventInput, ConnectorEventResponse } from '../sources.schemas.ts';
import { toIngested } from './run-attempt.ts';
import { assertRunTargets } from './secret-origins.ts';
import { type Deps, openCredential, sourceExtractor } from './shared.ts';
import { principalsOf } from './sync.ts';

/**
 * A webhook delivery for an `event` connector: verified against the credentials of the connector's
 * active pairs (no API key: the signature is the authentication), then stored for each pair whose
 * credential verified it and answered at once; a worker re-reads just the documents it names
 * (`processQueuedEvents`). Slack's `url_verification` is answered here. Refusals are counted
 * against the client's address by the router's `webhookProcedure`, not here: a service never reads
 * the request.
 */
export async function handleConnectorEvent({
  ctx,
  input,
}: {
  ctx: Deps;
  input: ConnectorEventInput;
}): Promise<ConnectorEventResponse> {
  // Every refusal is the answer for an absent connector (counted as a failed authentication by
  // `webhookProcedure`): before the signature is verified the caller learns nothing of the connector,
  // not even whether it exists.
  const refuse = (): never => {
    throw new AppError(
      'CONNECTOR_NOT_FOUND',
      `No connector ${input.connector_id} accepts this event: unknown connector, or a signature no active pair’s webhook secret matches`,
    );
  };
  const connector = await connectorsRepository.findConnector(ctx.db, input.connector_id);
  if (!connector) return refuse();
  const source = ctx.sources.get(connector.source);
  if (!source?.events || connector.input_type !== 'event') return refuse();
  const config = source.validateConfig(connector.connector_specific_config);
  if (!config.ok) return refuse();

  const now = new Date();
  const verified: { pairId: number; refs: unknown[]; challenge?: string; deliveryId?: string }[] = [];
  for (const pair of await connectorsRepository.listPairs(ctx.db, { connectorId: connector.id })) {
    if (pair.status === 'deleting') continue;
    const row = await connectorsRepository.findCredential(ctx.db, pair.credential_id);
    if (!row) continue;
    const credential = source.validateCredential(openCredential(ctx, row));
    if (!credential.ok) continue;
    const verdict = source.events.verify({
      headers: input.headers,
      rawBody: input.raw_body,
      credential: credential.value,
      now,
    });
    if (verdict.ok)
      verified.push({
        pairId: pair.id,
        refs: verdict.refs,
        challenge: verdict.challenge,
        deliveryId: verdict.deliveryId,
      });
  }
  if (!verified.length) return refuse();
  const challenge = verified.find((v) => v.challenge !== undefined)?.challenge;
  if (challenge !== undefined) return { success: true, challenge, queued: 0 };

  // A paused pair keeps its events: they are processed when it is resumed.
  const rows = verified
    .filter((v) => v.refs.length)
    .map((v) => ({ cc_pair_id: v.pairId, refs: v.refs, delivery_id: v.deliveryId?.slice(0, 200) ?? null }));
  const ids = await eventsRepository.insertEvents(ctx.db, rows);
  ctx.logger.info({ connector_id: connector.id, connector_event_ids: ids }, 'connector event queued');
  return { success: true, queued: ids.length };
}

export interface EventOptions {
  heartbeatMs: number;
  staleMs: number;
  backoffBaseMs: number;
  /** Tries of one event before it is marked failed. */
  maxTries: number;
}

const MAX_BACKOFF_MS = 60 * 60_000;

function reasonOf(error: unknown): string {
  if (error instanceof SourceError || error instanceof OutboundError) return error.message;
  return 'the event could not be processed (see the server log)';
}

/** Re-reads the documents an event names from the source and indexes them, or removes those gone. */
async function processEvent(
  ctx: Deps,
  event: EventRow,
  signal: AbortSignal,
): Promise<{ indexed: number; removed: number } | null> {
  const pair = await connectorsRepository.findPair(ctx.db, event.cc_pair_id);
  const connector = pair && (await connectorsRepository.findConnector(ctx.db, pair.connector_id));
  const row = pair && (await connectorsRepository.findCredential(ctx.db, pair.credential_id));
  if (!pair || !connector || !row) return null;
  const source = ctx.sources.get(connector.source);
  if (!source?.events) throw new SourceError('config', `Source "${connector.source}" does not accept events`);
  const config = source.validateConfig(connector.connector_specific_config);
  const credential = source.validateCredential(openCredential(ctx, row));
  if (!config.ok || !credential.ok)
    throw new SourceError('config', 'The connector configuration or credential is invalid');
  await assertRunTargets(ctx, row.id, source, config.value, credential.value);
  const log = ctx.logger.child({ cc_pair_id: pair.id, connector_event_id: event.id });
  const runSignal = AbortSignal.any([signal, AbortSignal.timeout(120_000)]);
  const found = await source.events.fetch(
    {
      config: config.value,
      credential: credential.value,
      fetch: ctx.outbound.fetch,
      signal: runSignal,
      logger: log,
      files: { read: (id) => connectorFilesRepository.readConnectorFile(ctx.db, id) },
      extract: sourceExtractor(ctx, runSignal),
      connectorId: connector.id,
      accessType: pair.access_type,
    },
    event.refs as never,
  );
  let indexed = 0;
  for (const doc of found.documents) {
    await documentsService.ingestDocument({
      ctx,
      input: { document: toIngested(doc, connector.source), cc_pair_id: pair.id },
      fromConnector: true,
      externalAccess:
        pair.access_type === 'sync' ? principalsOf(connector.source, doc.external_access) : null,
    });
    indexed++;
  }
  let removed = 0;
  if (found.deleted.length) {
    const owned = new Set(await indexingRepository.pairDocumentIds(ctx.db, pair.id));
    const gone = found.deleted.filter((id) => owned.has(id));
    const orphans = await indexingRepository.dropOwnership(ctx.db, pair.id, gone);
    await connectorsRepository.deleteDocuments(ctx.db, orphans);
    if (orphans.length) await ctx.search.deleteDocuments(orphans);
    removed = gone.length;
  }
  return { indexed, removed };
}

/**
 * Processes queued webhook events one at a time until none is due: each is claimed by exactly one
 * worker, heartbeats while it runs (a dead worker's event is requeued after `staleMs` and processed
 * again — re-indexing is idempotent), retried with backoff (honouring `Retry-After`) on a source
 * failure and marked failed, with its reason shown on the pair, after `maxTries`.
 */
export async function processQueuedEvents(
  ctx: Deps & { indexing: IndexingState },
  signal: AbortSignal,
  options: EventOptions,
): Promise<number> {
  const state = ctx.indexing;
  if (state.eventsBusy) return 0;
  state.eventsBusy = true;
  let processed = 0;
  try {
    const requeued = await eventsRepository.requeueStaleEvents(ctx.db, options.staleMs);
    if (requeued.length)
      ctx.logger.warn({ connector_event_ids: requeued }, 'retrying events whose worker stopped');
    while (!signal.aborted) {
      const event = await eventsRepository.claimEvent(ctx.db, state.workerId);
      if (!event) break;
      const beat = setInterval(() => {
        outsideBackground(() => eventsRepository.heartbeatEvent(ctx.db, event.id, state.workerId)).catch(
          () => {},
        );
      }, options.heartbeatMs);
      const log = ctx.logger.child({ cc_pair_id: event.cc_pair_id, connector_event_id: event.id });
      try {
        const counts = (await processEvent(ctx, event, signal)) ?? { indexed: 0, removed: 0 };
        await eventsRepository.finishEvent(ctx.db, event.id, state.workerId, counts);
        log.info(
          { documents_indexed: counts.indexed, documents_removed: counts.removed },
          'connector event processed',
        );
        processed++;
      } catch (error) {
        if (signal.aborted) {
          await eventsRepository.releaseEvent(ctx.db, event.id, state.workerId).catch(() => {});
          break;
        }
        const reason = reasonOf(error);
        const permanent = error instanceof SourceError && error.kind === 'config';
        const last = permanent || event.tries >= options.maxTries;
        const asked = error instanceof SourceError ? (error.retryAfterMs ?? 0) : 0;
        const backoff = Math.min(MAX_BACKOFF_MS, options.backoffBaseMs * 2 ** Math.max(0, event.tries - 1));
        const retryAt = last ? null : new Date(Date.now() + Math.max(asked, backoff));
        log.warn(
          { err: error, tries: event.tries, retry_at: retryAt },
          `connector event ${last ? 'failed' : 'not processed, retried later'}: ${reason}`,
        );
        await eventsRepository.failEvent(ctx.db, event.id, state.workerId, {
          error: `Try ${event.tries}: ${reason}`,
          retryAt,
        });
      } finally {
        clearInterval(beat);
      }
    }
    if (Date.now() - state.eventsPurgedAt > 3_600_000) {
      state.eventsPurgedAt = Date.now();
      await eventsRepository.purgeOldEvents(ctx.db);
    }
  } finally {
    state.eventsBusy = false;
  }
  return processed;
}
