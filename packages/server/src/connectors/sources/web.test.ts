import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWebsite, htmlPage, startFakeWebsite } from '../../../../../test/fakes/website.ts';
import { useTestRuntime } from '../../testing/runtime-fixture.ts';
import { connectorTestHelpers } from '../connectors.test-helpers.ts';

const t = useTestRuntime({
  KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
  KAS_CONNECTOR_HEARTBEAT_MS: '100',
  KAS_CONNECTOR_BACKOFF_MS: '0',
  KAS_WEB_MAX_PAGES: '30',
});
const { docIds, latestAttempt, settle, sourcePair } = connectorTestHelpers(t);
let site: FakeWebsite;

beforeAll(async () => {
  site = await startFakeWebsite();
});
afterAll(async () => {
  await site.close();
});

describe('web crawl of a huge sitemap', () => {
  it('takes at most KAS_WEB_MAX_PAGES URLs from a sitemap index of 150,000 URLs, without a crash', async () => {
    // One nested sitemap of 130,000 URLs (more than a spread call's argument limit) and one of 20,000.
    const urlset = (from: number, count: number) => {
      const locs: string[] = [];
      for (let i = from; i < from + count; i++) locs.push(`<url><loc>${site.url}/p${i}</loc></url>`);
      return `<?xml version="1.0"?><urlset>${locs.join('')}</urlset>`;
    };
    site.pages.set('/big.xml', urlset(0, 130_000));
    site.pages.set('/small.xml', urlset(130_000, 20_000));
    site.pages.set(
      '/index.xml',
      `<?xml version="1.0"?><sitemapindex><sitemap><loc>${site.url}/big.xml</loc></sitemap><sitemap><loc>${site.url}/small.xml</loc></sitemap></sitemapindex>`,
    );
    for (let i = 0; i < 40; i++) site.pages.set(`/p${i}`, htmlPage(`Page ${i}`, `page number ${i}`, []));

    const { pairId } = await sourcePair({
      name: 'huge sitemap',
      source: 'web',
      config: { base_url: `${site.url}/index.xml`, web_connector_type: 'sitemap' },
      credential: {},
    });
    await settle(pairId);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    const ids = await docIds(pairId);
    expect(ids).toHaveLength(30);
    expect(ids).toContain(`${site.url}/p0`);
    expect(ids).not.toContain(`${site.url}/p30`);
    // The limit was reached in the first nested sitemap: the second was never fetched.
    expect(site.hits.get('/small.xml') ?? 0).toBe(0);
  }, 60_000);

  it('stops following links at KAS_WEB_MAX_PAGES in a recursive crawl', async () => {
    const links = Array.from({ length: 100 }, (_, i) => `/r/${i}`);
    site.pages.set('/r/', htmlPage('Root', 'the root', links));
    for (const link of links) site.pages.set(link, htmlPage(link, `page ${link}`, []));
    const { pairId } = await sourcePair({
      name: 'wide site',
      source: 'web',
      config: { base_url: `${site.url}/r/`, web_connector_type: 'recursive' },
      credential: {},
    });
    await settle(pairId);
    expect(await latestAttempt(pairId)).toMatchObject({ status: 'success' });
    expect(await docIds(pairId)).toHaveLength(30);
  }, 60_000);
});
