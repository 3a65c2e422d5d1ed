import { sql } from 'kysely';
import { authenticate } from '../auth/authenticate.ts';
import * as identityService from '../identity/identity.service.ts';
import * as searchService from '../search/search.service.ts';
import type { RuntimeFixture } from '../testing/runtime-fixture.ts';
import * as usersService from '../users/users.service.ts';

type AccessType = 'public' | 'sync';

/** What the connector and source tests ask of a runtime: pairs made through the API, and what they indexed. */
export function connectorTestHelpers(t: RuntimeFixture) {
  let pairs = 0;

  /** Ids of the documents the pair indexed, sorted. */
  async function docIds(pairId: number): Promise<string[]> {
    const rows = await sql<{ document_id: string }>`
      SELECT document_id FROM document_by_cc_pair WHERE cc_pair_id = ${pairId} ORDER BY document_id`.execute(
      t.deps.db,
    );
    return rows.rows.map((r) => r.document_id);
  }

  /** The indexed text of a document: its chunks, space-joined. */
  async function textOf(id: string): Promise<string> {
    const rows = await sql<{ content: string }>`SELECT content FROM chunks WHERE document_id = ${id}`.execute(
      t.deps.db,
    );
    return rows.rows.map((r) => r.content).join(' ');
  }

  const latestAttempt = async (pairId: number) =>
    (await t.admin().connectors.indexAttempts({ cc_pair_id: pairId, page_num: 0, page_size: 1 })).items[0];

  /** Scheduler passes until the pair's latest attempt ended (earlier tests' failing pairs retry in the same passes). */
  async function settle(pairId: number) {
    for (let i = 0; i < 6; i++) {
      await t.pass();
      const status = (await latestAttempt(pairId))?.status;
      if (status && status !== 'not_started' && status !== 'in_progress') return;
    }
  }

  /** A basic person (linked to an identity at a source, if given) and a personal token of theirs. */
  async function person(email: string, identity?: { source: string; external_id: string }) {
    const user = await usersService.createPerson({ ctx: t.deps, email, role: 'basic' });
    const { token } = await identityService.createPersonalToken({
      ctx: t.deps,
      userId: user.id,
      input: { name: 'laptop' },
    });
    if (identity)
      await identityService.linkExternalIdentity({
        ctx: t.deps,
        identity: { user_id: user.id, ...identity },
      });
    return token as string;
  }

  /** Whether a search with this token finds the document. */
  async function sees(token: string, query: string, documentId: string): Promise<boolean> {
    const actor = await authenticate({ ctx: t.deps, authorization: `Bearer ${token}` });
    const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query });
    return chunks.some((c) => c.document_id === documentId);
  }

  /**
   * A connector, a credential and their pair, created by the admin: connector `<name> <n>`, pair
   * `<name> pair <n>`, numbered across the file.
   */
  async function sourcePair(args: {
    name: string;
    source: string;
    config: Record<string, unknown>;
    credential: Record<string, unknown>;
    inputType?: 'poll' | 'event' | 'load_state';
    accessType?: AccessType;
    extra?: { prune_freq?: number };
  }) {
    pairs++;
    const access_type = args.accessType ?? 'public';
    const { id: connectorId } = await t.admin().connectors.create({
      name: `${args.name} ${pairs}`,
      source: args.source,
      input_type: args.inputType ?? 'poll',
      connector_specific_config: args.config,
      access_type,
      refresh_freq: 3600,
      ...args.extra,
    });
    const cred = await t.admin().connectors.createCredential({
      source: args.source,
      credential_json: args.credential,
    });
    const pairId = (
      await t.admin().connectors.createPair({
        connector_id: connectorId,
        credential_id: cred.id,
        name: `${args.name} pair ${pairs}`,
        access_type,
      })
    ).data as number;
    return { connectorId, pairId, credentialId: cred.id };
  }

  /** A rate-limited attempt waits in the queue with its checkpoint: until when (epoch ms) and why (the pair's status). */
  async function waiting(pairId: number) {
    for (let i = 0; i < 6; i++) {
      const { progress } = await t.admin().connectors.getPair({ cc_pair_id: pairId });
      if (progress?.waiting_until)
        return { until: new Date(progress.waiting_until).getTime(), reason: progress.waiting_reason ?? '' };
      await t.pass();
    }
    return { until: 0, reason: '' };
  }

  return { docIds, textOf, latestAttempt, settle, person, sees, sourcePair, waiting };
}
