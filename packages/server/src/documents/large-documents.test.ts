import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWebsite, htmlPage, startFakeWebsite } from '../../../../test/fakes/website.ts';
import { connectorTestHelpers } from '../connectors/connectors.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';

/** Short numbered sentences: ~9,000 chunks of 512 tokens in ~9.4 MB (so more than 65,535 / 8 rows). */
function numbers(lines: number, seed = 0): string {
  return Array.from(
    { length: lines },
    (_, i) => `${(i + seed) % 1000} ${i % 997} ${i % 991} ${i % 983}.`,
  ).join('\n');
}

async function chunksOf(t: ReturnType<typeof useTestRuntime>, id: string) {
  const row = await t.deps.db
    .selectFrom('chunks')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.max('chunk_id').as('last')])
    .where('document_id', '=', id)
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), last: Number(row.last) };
}

describe('a document of more than 8,191 chunks', () => {
  const t = useTestRuntime();

  it('is written (more than 65,535 bind parameters as rows), then replaced in place', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.documents.ingest({
      document: { id: 'huge', semantic_identifier: 'Huge', sections: [{ text: numbers(9000 * 63) }] },
    });
    expect(created).toEqual({ document_id: 'huge', already_existed: false });
    const first = await chunksOf(t, 'huge');
    expect(first.count).toBeGreaterThan(8191);
    expect(first.last).toBe(first.count - 1);
    const stored = await t.deps.db
      .selectFrom('documents')
      .select('chunk_count')
      .where('id', '=', 'huge')
      .executeTakeFirstOrThrow();
    expect(stored.chunk_count).toBe(first.count);

    // Changed content: the chunks are deleted and written again.
    const updated = await admin.documents.ingest({
      document: { id: 'huge', semantic_identifier: 'Huge', sections: [{ text: numbers(9000 * 63, 1) }] },
    });
    expect(updated.already_existed).toBe(true);
    expect((await chunksOf(t, 'huge')).count).toBeGreaterThan(8191);
  }, 400_000);

  it('keeps the order of requests for one id when the first is prepared in the CPU pool', async () => {
    const admin = t.caller(t.adminKey);
    const [first, second] = await Promise.all([
      admin.documents.ingest({
        document: { id: 'ordered', semantic_identifier: 'Ordered', sections: [{ text: numbers(20_000) }] },
      }),
      admin.documents.ingest({
        document: { id: 'ordered', semantic_identifier: 'Ordered', sections: [{ text: 'The last word.' }] },
      }),
    ]);
    expect(first.already_existed).toBe(false);
    expect(second.already_existed).toBe(true);
    const chunks = await t.deps.db
      .selectFrom('chunks')
      .select('content')
      .where('document_id', '=', 'ordered')
      .execute();
    expect(chunks.map((c) => c.content)).toEqual(['The last word.']);
  });
});

describe('a document over KAS_MAX_DOCUMENT_CHUNKS', () => {
  const t = useTestRuntime({ KAS_MAX_DOCUMENT_CHUNKS: '40', KAS_OUTBOUND_ALLOWLIST: '127.0.0.1' });
  const { docIds } = connectorTestHelpers(t);
  let site: FakeWebsite;
  beforeAll(async () => {
    site = await startFakeWebsite();
  });
  afterAll(async () => {
    await site.close();
  });

  it('is refused with a 413 naming the limit, and nothing is written', async () => {
    const admin = t.caller(t.adminKey);
    const error = await errorOf(
      admin.documents.ingest({
        document: { id: 'too-long', semantic_identifier: 'Too long', sections: [{ text: numbers(4000) }] },
      }),
    );
    expect(error.status).toBe(413);
    expect(error.error_code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.detail).toMatch(/"too-long".*40 chunks.*KAS_MAX_DOCUMENT_CHUNKS/);
    expect((await chunksOf(t, 'too-long')).count).toBe(0);
    // Within the limit: accepted.
    const fine = await admin.documents.ingest({
      document: { id: 'fine', semantic_identifier: 'Fine', sections: [{ text: numbers(200) }] },
    });
    expect(fine.already_existed).toBe(false);
  });

  it('a crawled page over the limit is an error of the index attempt naming the limit; the others are indexed', async () => {
    const { admin, pass } = t;
    site.pages.set('/', htmlPage('Home', numbers(12_000), ['/small']));
    site.pages.set('/small', htmlPage('Small', 'a small page about quokkas', []));
    const { id: connectorId } = await admin().connectors.create({
      name: 'site',
      source: 'web',
      input_type: 'poll',
      connector_specific_config: { base_url: `${site.url}/`, web_connector_type: 'recursive' },
      access_type: 'public',
      refresh_freq: 60,
    });
    const credential = await admin().connectors.createCredential({ source: 'web', credential_json: {} });
    const pairId = (
      await admin().connectors.createPair({
        connector_id: connectorId,
        credential_id: credential.id,
        name: 'p',
      })
    ).data as number;
    await pass();
    expect(await docIds(pairId)).toEqual([`${site.url}/small`]);
    const errors = await admin().connectors.errors({ cc_pair_id: pairId, page_num: 0, page_size: 5 });
    expect(errors.items).toHaveLength(1);
    expect(errors.items[0]).toMatchObject({ document_id: `${site.url}/` });
    expect(errors.items[0]?.failure_message).toMatch(/40 chunks.*KAS_MAX_DOCUMENT_CHUNKS/);
  });
});
