/**
 * `npm run bench -w test`: every benchmark in one run, each in its own process and one after the other
 * (they would disturb each other's figures), printing their figures.
 *   platform   authenticated requests vs a bare express server (issue: platform)
 *   documents  ingestion throughput, admin search latency vs bare SQL (issue: documents and search)
 *   chat       stream overhead, time before the model is called, 50 concurrent streams (issue: chat)
 *   search-eval retrieval and cited answers on the PostgreSQL manual and the Python docs vs an in-process BM25 (issue: search)
 *   connectors 20,000-page local website through the web connector: pages/s, worker RSS, pause latency, two workers (issue: connectors)
 *   responsiveness /api/health and admin search p99 while 8 clients ingest 5 MB documents and one uploads a 20 MB PDF (issue 22)
 *   mcp        the MCP search tool's round trip vs the same admin search over REST; 50 concurrent MCP sessions
 *   openai     /v1 first content token vs the NDJSON stream, 50 concurrent /v1 streams, resume's first replayed line
 *   batch-ingestion  POST /api/svc-api/ingestion/batch, 8 clients × 100 ~300-word documents, vs bare multi-row inserts of the same rows (issue 27)
 *   topology   2 API processes + 1 worker + a Postgres primary and a streaming replica: searches and batch ingestion at once, per process
 *   maintenance where one search-statistics maintenance round after a bulk load of 100k chunks spends its time (Postgres)
 *   idle-rss   idle memory of `kas serve` (first start, restart) vs the old defaults, and where it goes (issue: reliability)
 * `npm run bench -w test -- chat` runs only the named ones.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ALL = [
  'platform',
  'documents',
  'batch-ingestion',
  'topology',
  'maintenance',
  'search-eval',
  'chat',
  'connectors',
  'idle-rss',
  'responsiveness',
  'mcp',
  'openai',
];
const chosen = process.argv.slice(2).filter((name) => ALL.includes(name));
let failed = 0;
for (const name of chosen.length ? chosen : ALL) {
  console.log(`\n# ${name}\n`);
  const result = spawnSync(process.execPath, [join(import.meta.dirname, `${name}.ts`)], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    console.log(`benchmark ${name} failed (exit ${result.status})`);
  }
}
process.exit(failed ? 1 : 0);
