import type { Context } from '../../context.ts';
import * as documentsService from '../../documents/documents.service.ts';
import { AppError } from '../../errors.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import * as connectorFilesRepository from '../files.repository.ts';
import * as indexingRepository from '../indexing.repository.ts';
import { SourceError } from '../sources/source.ts';
import type { ConnectorEventInput, ConnectorEventResponse } from '../sources.schemas.ts';
import { toIngested } from './run-attempt.ts';
import { connectorNotFound, type Deps, openCredential } from './shared.ts';
import { principalsOf } from './sync.ts';

type EventCtx = Deps & Pick<Context, 'authFailures' | 'clientAddress'>;

/**
 * A webhook delivery for an `event` connector: verified against the credentials of the connector's
 * active pairs (no API key: the signature is the authentication), then only the documents it names are
 * re-read from the source and re-indexed for each pair whose credential verified it, or removed when the
 * source no longer has them.
 */
export async function handleConnectorEvent({
  ctx,
  input,
}: {
  ctx: EventCtx;
  input: ConnectorEventInput;
}): Promise<ConnectorEventResponse> {
  await ctx.authFailures.assertAllowed(ctx.clientAddress);
  const connector = await connectorsRepository.findConnector(ctx.db, input.connector_id);
  if (!connector) throw connectorNotFound(input.connector_id);
  const source = ctx.sources.get(connector.source);
  if (!source?.events)
    throw new AppError(
      'INVALID_INPUT',
      `Connector ${connector.id} (${connector.source}) does not accept events`,
    );
  if (connector.input_type !== 'event')
    throw new AppError(
      'INVALID_INPUT',
      `Connector ${connector.id} has input_type ${connector.input_type}; events are accepted with input_type event`,
    );
  const config = source.validateConfig(connector.connector_specific_config);
  if (!config.ok)
    throw new AppError('INVALID_INPUT', `Connector ${connector.id} has an invalid configuration`);

  const now = new Date();
  const verified: {
    pairId: number;
    accessType: 'public' | 'private' | 'sync';
    credential: unknown;
    refs: unknown[];
    challenge?: string;
  }[] = [];
  for (const pair of await connectorsRepository.listPairs(ctx.db, { connectorId: connector.id })) {
    if (pair.status === 'paused' || pair.status === 'deleting') continue;
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
        accessType: pair.access_type,
        credential: credential.value,
        refs: verdict.refs,
        challenge: verdict.challenge,
      });
  }
  if (!verified.length) {
    await ctx.authFailures.record(ctx.clientAddress);
    throw new AppError(
      'UNAUTHENTICATED',
      `The event's signature does not match the webhook secret of any active pair of connector ${connector.id}`,
    );
  }
  const challenge = verified.find((v) => v.challenge !== undefined)?.challenge;
  if (challenge !== undefined)
    return { success: true, challenge, documents_indexed: 0, documents_removed: 0 };

  let indexed = 0;
  let removed = 0;
  const log = ctx.logger.child({ connector_id: connector.id });
  for (const { pairId, accessType, credential, refs } of verified) {
    if (!refs.length) continue;
    let found: Awaited<ReturnType<NonNullable<typeof source.events>['fetch']>>;
    try {
      found = await source.events.fetch(
        {
          config: config.value,
          credential,
          fetch: ctx.outbound.fetch,
          signal: AbortSignal.timeout(60_000),
          logger: log,
          files: { read: (id) => connectorFilesRepository.readConnectorFile(ctx.db, id) },
          connectorId: connector.id,
          accessType,
        },
        refs as never,
      );
    } catch (error) {
      const reason = error instanceof SourceError ? error.message : 'the source could not be read';
      log.warn({ err: error, cc_pair_id: pairId }, `connector event not processed: ${reason}`);
      throw new AppError('SERVICE_UNAVAILABLE', `The event could not be processed: ${reason}`);
    }
    for (const doc of found.documents) {
      await documentsService.ingestDocument({
        ctx,
        input: { document: toIngested(doc, connector.source), cc_pair_id: pairId },
        fromConnector: true,
        externalAccess: accessType === 'sync' ? principalsOf(connector.source, doc.external_access) : null,
      });
      indexed++;
    }
    if (found.deleted.length) {
      const owned = new Set(await indexingRepository.pairDocumentIds(ctx.db, pairId));
      const gone = found.deleted.filter((id) => owned.has(id));
      const orphans = await indexingRepository.dropOwnership(ctx.db, pairId, gone);
      await connectorsRepository.deleteDocuments(ctx.db, orphans);
      if (orphans.length) await ctx.search.deleteDocuments(orphans);
      removed += gone.length;
    }
  }
  log.info({ documents_indexed: indexed, documents_removed: removed }, 'connector event processed');
  return { success: true, documents_indexed: indexed, documents_removed: removed };
}
