import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as documentsService from '../documents/documents.service.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { type AnySource, validateWith } from './sources/source.ts';

/** A source that needs a wiki base and space and a token, like the real wiki sources. */
const wiki: AnySource = {
  name: 'wiki',
  displayName: 'Wiki',
  needsCredential: true,
  inputTypes: ['poll', 'load_state'],
  validateConfig: (raw) => validateWith(z.object({ wiki_base: z.url(), space: z.string().min(1) }), raw),
  validateCredential: (raw) =>
    validateWith(z.object({ token: z.string().min(1), email: z.string().optional() }), raw),
  publicCredentialKeys: ['email'],
  async *load() {
    yield { documents: [], checkpoint: null };
  },
};

const t = useTestRuntime();
let curator: { key: string; user_id: string };
let basic: { key: string; user_id: string };
let groupA: number;
let groupB: number;

const config = { wiki_base: 'https://wiki.example', space: 'ENG' };
const connectorInput = {
  name: 'Engineering wiki',
  source: 'wiki',
  input_type: 'poll' as const,
  connector_specific_config: config,
  access_type: 'public' as const,
  refresh_freq: 3600,
};

beforeAll(async () => {
  t.deps.sources.register(wiki);
  curator = await t.createKey('basic', 'curator');
  basic = await t.createKey('basic', 'basic');
  const admin = t.caller(t.adminKey);
  groupA = (await admin.userGroups.create({ name: 'A', user_ids: [curator.user_id] })).id;
  groupB = (await admin.userGroups.create({ name: 'B', user_ids: [] })).id;
  await admin.userGroups.setCurator({ user_group_id: groupA, user_id: curator.user_id, is_curator: true });
});

describe('connectors', () => {
  it('creates, lists, updates and deletes a connector', async () => {
    const admin = t.caller(t.adminKey);
    const { id } = await admin.connectors.create(connectorInput);
    const listed = await admin.connectors.list({});
    expect(listed.map((c) => c.id)).toContain(id);
    expect(listed.some((c) => c.source === 'ingestion_api')).toBe(false);
    const updated = await admin.connectors.update({ connector_id: id, refresh_freq: null, name: 'Renamed' });
    expect(updated).toMatchObject({
      id,
      name: 'Renamed',
      refresh_freq: null,
      connector_specific_config: config,
    });
    expect(updated.credential_ids).toEqual([]);
    await admin.connectors.delete({ connector_id: id });
    expect(await errorOf(admin.connectors.update({ connector_id: id, name: 'x' }))).toMatchObject({
      status: 404,
      error_code: 'CONNECTOR_NOT_FOUND',
    });
  });

  it('rejects an invalid configuration naming every bad or missing key (400)', async () => {
    const admin = t.caller(t.adminKey);
    const error = await errorOf(
      admin.connectors.create({
        ...connectorInput,
        connector_specific_config: {},
        refresh_freq: 10,
        prune_freq: 5,
      }),
    );
    expect(error).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    for (const key of [
      'connector_specific_config.wiki_base',
      'connector_specific_config.space',
      'refresh_freq',
      'prune_freq',
    ]) {
      expect(error.detail).toContain(key);
    }
    const unknown = await errorOf(admin.connectors.create({ ...connectorInput, source: 'gopher' }));
    expect(unknown).toMatchObject({
      status: 400,
      detail: expect.stringContaining('unknown source "gopher"'),
    });
    expect(await errorOf(admin.connectors.create({ ...connectorInput, input_type: 'event' }))).toMatchObject({
      status: 400,
      detail: expect.stringContaining('input_type'),
    });
  });

  it('keeps credentials encrypted at rest and masked on every read', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.connectors.createCredential({
      name: 'wiki token',
      source: 'wiki',
      credential_json: { token: 'super-secret-token', email: 'bot@example.com' },
    });
    expect(created.credential_json).toEqual({ token: '********', email: 'bot@example.com' });
    const stored = await sql<{
      credential_json: string;
    }>`SELECT credential_json FROM credentials WHERE id = ${created.id}`.execute(t.deps.db);
    expect(stored.rows[0]?.credential_json).not.toContain('super-secret-token');
    expect(JSON.stringify(await admin.connectors.listCredentials({}))).not.toContain('super-secret-token');
    expect(JSON.stringify(await admin.connectors.getCredential({ credential_id: created.id }))).not.toContain(
      'super-secret',
    );

    const patched = await admin.connectors.updateCredential({
      credential_id: created.id,
      name: 'renamed',
      credential_json: { token: '********', email: 'other@example.com' },
    });
    expect(patched).toMatchObject({
      name: 'renamed',
      credential_json: { token: '********', email: 'other@example.com' },
    });
    const again = await sql<{
      credential_json: string;
    }>`SELECT credential_json FROM credentials WHERE id = ${created.id}`.execute(t.deps.db);
    expect(JSON.parse(t.deps.secrets.decrypt(again.rows[0]?.credential_json ?? ''))).toEqual({
      token: 'super-secret-token',
      email: 'other@example.com',
    });

    const bad = await errorOf(admin.connectors.createCredential({ source: 'wiki', credential_json: {} }));
    expect(bad).toMatchObject({ status: 400, detail: expect.stringContaining('credential_json.token') });
    await admin.connectors.deleteCredential({ credential_id: created.id });
    expect(await errorOf(admin.connectors.getCredential({ credential_id: created.id }))).toMatchObject({
      status: 404,
    });
  });

  it('pairs a connector with a credential, shows details, pauses, resumes and queues runs', async () => {
    const admin = t.caller(t.adminKey);
    const { id: connectorId } = await admin.connectors.create({ ...connectorInput, name: 'pairing' });
    const credential = await admin.connectors.createCredential({
      source: 'wiki',
      credential_json: { token: 'tok-123456' },
    });
    const pairing = await admin.connectors.createPair({
      connector_id: connectorId,
      credential_id: credential.id,
      name: 'Wiki pair',
      access_type: 'private',
      groups: [groupB],
    });
    expect(pairing).toMatchObject({ success: true, data: expect.any(Number) });
    const pairId = pairing.data as number;
    expect(
      await errorOf(
        admin.connectors.createPair({
          connector_id: connectorId,
          credential_id: credential.id,
          name: 'Wiki pair',
        }),
      ),
    ).toMatchObject({ status: 400 });
    const other = await admin.connectors.create({ ...connectorInput, name: 'other' });
    expect(
      await errorOf(
        admin.connectors.createPair({
          connector_id: other.id,
          credential_id: credential.id,
          name: 'Wiki pair',
        }),
      ),
    ).toMatchObject({ status: 400, detail: expect.stringContaining('unique') });

    const details = await admin.connectors.getPair({ cc_pair_id: pairId });
    expect(details).toMatchObject({
      id: pairId,
      name: 'Wiki pair',
      status: 'scheduled',
      access_type: 'private',
      num_docs_indexed: 0,
      groups: [groupB],
      last_index_attempt_status: 'not_started',
      number_of_index_attempts: 1,
      indexing: false,
      in_repeated_error_state: false,
      connector: { id: connectorId, credential_ids: [credential.id] },
      credential: { id: credential.id, credential_json: { token: '********' } },
    });
    expect((await admin.connectors.list({ credential: credential.id })).map((c) => c.id)).toEqual([
      connectorId,
    ]);

    expect(await admin.connectors.setPairStatus({ cc_pair_id: pairId, status: 'paused' })).toMatchObject({
      success: true,
    });
    expect((await admin.connectors.getPair({ cc_pair_id: pairId })).status).toBe('paused');
    const skipped = await admin.connectors.runOnce({ connector_id: connectorId });
    expect(skipped).toMatchObject({ success: false });
    await admin.connectors.setPairStatus({ cc_pair_id: pairId, status: 'active' });
    expect((await admin.connectors.getPair({ cc_pair_id: pairId })).status).toBe('scheduled');
    expect(await admin.connectors.runOnce({ connector_id: connectorId, from_beginning: true })).toMatchObject(
      {
        success: true,
        data: 1,
      },
    );
    expect(
      await errorOf(admin.connectors.runOnce({ connector_id: connectorId, credential_ids: [99_999] })),
    ).toMatchObject({
      status: 400,
    });
    expect(await errorOf(admin.connectors.runOnce({ connector_id: 99_999 }))).toMatchObject({ status: 404 });

    const attempts = await admin.connectors.indexAttempts({ cc_pair_id: pairId, page_num: 0, page_size: 10 });
    expect(attempts.total_items).toBe(1);
    expect(attempts.items[0]).toMatchObject({ status: 'not_started', from_beginning: true });
    expect(await admin.connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 10 })).toEqual({
      items: [],
      total_items: 0,
    });
    const status = await admin.connectors.indexingStatus({});
    expect(status.find((s) => s.cc_pair_id === pairId)).toMatchObject({
      source: 'wiki',
      status: 'scheduled',
      indexing: false,
    });

    expect(await errorOf(admin.connectors.delete({ connector_id: connectorId }))).toMatchObject({
      status: 400,
      detail: expect.stringContaining('not deletable'),
    });
    expect(await errorOf(admin.connectors.getPair({ cc_pair_id: 99_999 }))).toMatchObject({
      status: 404,
      error_code: 'CC_PAIR_NOT_FOUND',
    });
  });

  it('deletes a pair in the background: its own documents go, shared ones stay', async () => {
    const admin = t.caller(t.adminKey);
    const { id: connectorId } = await admin.connectors.create({ ...connectorInput, name: 'to delete' });
    const credential = await admin.connectors.createCredential({
      source: 'wiki',
      credential_json: { token: 'tok' },
    });
    const pairId = (
      await admin.connectors.createPair({
        connector_id: connectorId,
        credential_id: credential.id,
        name: 'Doomed',
      })
    ).data as number;
    const doc = (id: string) => ({
      id,
      semantic_identifier: id,
      sections: [{ text: `zebrafish ${id} content` }],
    });
    await documentsService.ingestDocument({
      ctx: t.deps,
      input: { document: doc('only-mine'), cc_pair_id: pairId },
    });
    await documentsService.ingestDocument({
      ctx: t.deps,
      input: { document: doc('shared'), cc_pair_id: pairId },
    });
    await documentsService.ingestDocument({ ctx: t.deps, input: { document: doc('shared') } });
    expect((await admin.connectors.getPair({ cc_pair_id: pairId })).num_docs_indexed).toBe(2);
    const before = await admin.search.adminSearch({ query: 'zebrafish', filters: {} });
    expect(before.documents.map((d) => d.document_id).sort()).toEqual(['only-mine', 'shared']);

    const started = await admin.connectors.deletionAttempt({
      connector_id: connectorId,
      credential_id: credential.id,
    });
    expect(started).toMatchObject({ success: true, data: pairId });
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const gone = await errorOf(admin.connectors.getPair({ cc_pair_id: pairId })).catch(() => null);
      if (gone?.status === 404) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await errorOf(admin.connectors.getPair({ cc_pair_id: pairId }))).toMatchObject({ status: 404 });
    const docs = await sql<{
      id: string;
    }>`SELECT id FROM documents WHERE id IN ('only-mine', 'shared')`.execute(t.deps.db);
    expect(docs.rows.map((r) => r.id)).toEqual(['shared']);
    const hits = await admin.search.adminSearch({ query: 'zebrafish', filters: {} });
    expect(hits.documents.map((d) => d.document_id)).toEqual(['shared']);
    expect((await admin.connectors.list({})).map((c) => c.id)).not.toContain(connectorId);
  });

  it('limits curators to their groups and refuses basic keys', async () => {
    const admin = t.caller(t.adminKey);
    const asCurator = t.caller(curator.key);
    const theirs = await asCurator.connectors.create({
      ...connectorInput,
      name: 'curated',
      groups: [groupA],
    });
    const credential = await asCurator.connectors.createCredential({
      source: 'wiki',
      credential_json: { token: 'c' },
      groups: [groupA],
    });
    expect(
      await errorOf(
        asCurator.connectors.createPair({
          connector_id: theirs.id,
          credential_id: credential.id,
          name: 'curated pair B',
          groups: [groupB],
        }),
      ),
    ).toMatchObject({ status: 403 });
    const pairId = (
      await asCurator.connectors.createPair({
        connector_id: theirs.id,
        credential_id: credential.id,
        name: 'curated pair',
        access_type: 'private',
        groups: [groupA],
      })
    ).data as number;
    expect((await asCurator.connectors.getPair({ cc_pair_id: pairId })).groups).toEqual([groupA]);

    const adminConnector = await admin.connectors.create({ ...connectorInput, name: 'admin only' });
    const adminCredential = await admin.connectors.createCredential({
      source: 'wiki',
      credential_json: { token: 'a' },
    });
    const adminPair = (
      await admin.connectors.createPair({
        connector_id: adminConnector.id,
        credential_id: adminCredential.id,
        name: 'admin pair',
        groups: [groupB],
      })
    ).data as number;
    // Another group's objects answer exactly like absent ones (no existence oracle).
    const NONE = 999999;
    const sameAsAbsent = async (id: number, call: (id: number) => Promise<unknown>) => {
      const absent = await errorOf(call(NONE));
      expect(absent.status).toBe(404);
      expect(await errorOf(call(id))).toEqual({
        ...absent,
        detail: absent.detail.replace(`${NONE}`, `${id}`),
      });
    };
    await sameAsAbsent(adminPair, (id) => asCurator.connectors.getPair({ cc_pair_id: id }));
    await sameAsAbsent(adminPair, (id) =>
      asCurator.connectors.setPairStatus({ cc_pair_id: id, status: 'paused' }),
    );
    await sameAsAbsent(adminPair, (id) =>
      asCurator.connectors.indexAttempts({ cc_pair_id: id, page_num: 0, page_size: 10 }),
    );
    await sameAsAbsent(adminConnector.id, (id) =>
      asCurator.connectors.update({ connector_id: id, name: 'x' }),
    );
    await sameAsAbsent(adminConnector.id, (id) =>
      asCurator.connectors.deletionAttempt({ connector_id: id, credential_id: adminCredential.id }),
    );
    await sameAsAbsent(adminConnector.id, (id) => asCurator.connectors.delete({ connector_id: id }));
    await sameAsAbsent(adminConnector.id, (id) => asCurator.connectors.runOnce({ connector_id: id }));
    await sameAsAbsent(adminCredential.id, (id) => asCurator.connectors.getCredential({ credential_id: id }));
    await sameAsAbsent(adminCredential.id, (id) =>
      asCurator.connectors.updateCredential({ credential_id: id, name: 'x' }),
    );
    await sameAsAbsent(adminCredential.id, (id) =>
      asCurator.connectors.deleteCredential({ credential_id: id }),
    );
    await sameAsAbsent(adminCredential.id, (id) =>
      asCurator.connectors.createPair({
        connector_id: theirs.id,
        credential_id: id,
        name: 'x',
        groups: [groupA],
      }),
    );
    await sameAsAbsent(adminConnector.id, (id) =>
      asCurator.connectors.createPair({
        connector_id: id,
        credential_id: credential.id,
        name: 'x',
        groups: [groupA],
      }),
    );
    const visible = (await asCurator.connectors.list({})).map((c) => c.id);
    expect(visible).toContain(theirs.id);
    expect(visible).not.toContain(adminConnector.id);
    expect((await asCurator.connectors.indexingStatus({})).map((s) => s.cc_pair_id)).toEqual([pairId]);

    expect(await errorOf(t.caller(basic.key).connectors.list({}))).toMatchObject({ status: 403 });
    expect(await errorOf(t.caller().connectors.list({}))).toMatchObject({ status: 401 });
  });
});
