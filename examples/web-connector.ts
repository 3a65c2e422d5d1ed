/**
 * Indexes a local website end to end with the web connector, printing progress and ETA, then searches it.
 * The example serves the site itself (20 linked pages on a random port).
 * Usage: KAS_URL=http://127.0.0.1:8080 KAS_API_KEY=<admin key> npm run -s example -- web-connector
 * The kas server must run its worker (`kas serve`) and allow the site: KAS_OUTBOUND_ALLOWLIST=127.0.0.1.
 * Exits non-zero on any mismatch.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createKasClient } from '@kas/sdk';

const baseUrl = process.env.KAS_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.KAS_API_KEY;
if (!apiKey) {
  console.error('Set KAS_API_KEY to an admin or curator key.');
  process.exit(2);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) {
    console.error(`MISMATCH: ${message}`);
    process.exit(1);
  }
}

const PAGES = 20;
const site = createServer((req, res) => {
  const match = /^\/(?:page-(\d+))?$/.exec(req.url ?? '');
  const n = match?.[1] === undefined ? 0 : Number(match[1]);
  if (!match || n >= PAGES) {
    res.statusCode = 404;
    return res.end('not found');
  }
  const links = [n + 1, n + 2].filter((i) => i < PAGES).map((i) => `<a href="/page-${i}">page ${i}</a>`);
  res.setHeader('content-type', 'text/html');
  res.end(
    `<html><head><title>Handbook page ${n}</title></head><body><h1>Handbook page ${n}</h1>` +
      `<p>Chapter ${n} of the handbook explains ${n === 7 ? 'the capybara onboarding ritual' : 'ordinary things'}.</p>${links.join(' ')}</body></html>`,
  );
});
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;

const kas = createKasClient({ baseUrl, apiKey });
const suffix = Date.now().toString(36);
const { id: connectorId } = await kas.connectors.create({
  name: `Handbook ${suffix}`,
  source: 'web',
  input_type: 'poll',
  access_type: 'public',
  refresh_freq: 3600,
  connector_specific_config: { base_url: siteUrl, web_connector_type: 'recursive' },
});
const credential = await kas.connectors.credentials.create({ source: 'web', credential_json: {} });
const pairId = await kas.connectors.pairs.create(connectorId, credential.id, { name: `Handbook ${suffix}` });
console.log(`connector ${connectorId}, credential ${credential.id}, CC pair ${pairId}: indexing ${siteUrl}`);

const done = await kas.connectors.pairs.waitForIndexing(pairId, {
  intervalMs: 200,
  timeoutMs: 120_000,
  onProgress: (pair) => {
    const p = pair.progress;
    if (p) {
      const eta = p.eta_seconds === null ? '?' : `${p.eta_seconds}s`;
      console.log(
        `  ${pair.status}: ${p.docs_done}/${p.docs_total ?? '?'} pages, ${p.docs_per_second ?? '?'} pages/s, ETA ${eta}`,
      );
    }
  },
});
console.log(`finished: ${done.last_index_attempt_status}, ${done.num_docs_indexed} pages indexed`);
check(done.last_index_attempt_status === 'success', 'the attempt succeeded');
check(done.num_docs_indexed === PAGES, `${PAGES} pages indexed`);

const hits = await kas.documents.search('capybara onboarding');
console.log(
  `search "capybara onboarding": ${hits.documents[0]?.semantic_identifier} (${hits.documents[0]?.link})`,
);
check(hits.documents[0]?.semantic_identifier === 'Handbook page 7', 'search finds the page');

await kas.connectors.pairs.delete(connectorId, credential.id);
console.log('CC pair deleted');
site.close();
