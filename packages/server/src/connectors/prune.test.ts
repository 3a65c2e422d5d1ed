import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWebsite, htmlPage, startFakeWebsite } from '../../../../test/fakes/website.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { connectorTestHelpers } from './connectors.test-helpers.ts';

const t = useTestRuntime({ KAS_OUTBOUND_ALLOWLIST: '127.0.0.1', KAS_CONNECTOR_BACKOFF_MS: '0' });
const { admin, pass } = t;
const { docIds } = connectorTestHelpers(t);
let site: FakeWebsite;

beforeAll(async () => {
  site = await startFakeWebsite();
});
afterAll(async () => {
  await site.close();
});

describe('prune runs (prune_freq)', () => {
  it('a web pair indexed once is pruned at its prune interval without re-indexing; a failed listing removes nothing', async () => {
    site.pages.set('/', htmlPage('Home', 'the home page', ['/a', '/b']));
    site.pages.set('/a', htmlPage('A', 'page a about lemurs', []));
    site.pages.set('/b', htmlPage('B', 'page b about tarsiers', []));
    const { id: connectorId } = await admin().connectors.create({
      name: 'pruned site',
      source: 'web',
      input_type: 'load_state',
      connector_specific_config: { base_url: `${site.url}/`, web_connector_type: 'recursive' },
      access_type: 'public',
      refresh_freq: null,
      prune_freq: 300,
    });
    const credential = await admin().connectors.createCredential({ source: 'web', credential_json: {} });
    const pairId = (
      await admin().connectors.createPair({
        connector_id: connectorId,
        credential_id: credential.id,
        name: 'pruned',
      })
    ).data as number;
    await pass();
    const u = (p: string) => `${site.url}${p}`;
    expect(await docIds(pairId)).toEqual([u('/'), u('/a'), u('/b')]);
    const attempts = async () =>
      (await admin().connectors.indexAttempts({ cc_pair_id: pairId, page_num: 0, page_size: 10 }))
        .total_items;
    expect(await attempts()).toBe(1);

    site.pages.delete('/b');
    site.failWith = 500;
    const due = sql`UPDATE cc_pairs SET last_pruned = now() - interval '1 hour' WHERE id = ${pairId}`;
    await due.execute(t.deps.db);
    await pass();
    // The home page failed: the listing is incomplete, so nothing is removed.
    expect(await docIds(pairId)).toEqual([u('/'), u('/a'), u('/b')]);

    site.failWith = null;
    await due.execute(t.deps.db);
    const hitsBefore = site.hits.get('/a') ?? 0;
    await pass();
    expect(await docIds(pairId)).toEqual([u('/'), u('/a')]);
    expect(site.hits.get('/a')).toBe(hitsBefore + 1);
    // No index attempt ran (refresh_freq is null): only the prune listing.
    expect(await attempts()).toBe(1);
    const hits = await admin().search.adminSearch({ query: 'tarsiers', filters: {} });
    expect(hits.documents.map((d) => d.document_id)).not.toContain(u('/b'));
  });
});
