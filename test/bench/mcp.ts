/**
 * MCP benchmark (kas as an MCP server).
 *   1. The `search` tool's round trip over MCP (Streamable HTTP, stateless, one JSON-RPC POST per call)
 *      against the same admin search over REST, query by query on one keep-alive connection each, with
 *      the same admin key and the same result size (50 documents): target MCP p50 within 5 ms of REST.
 *      Also the tool's default size (10 documents).
 *   2. 50 concurrent MCP sessions through the MCP SDK's own client (initialize, list tools, then search
 *      calls in parallel): target 0 errors.
 * Sizes: BENCH_MCP_CHUNKS (default 100000; inserted directly with SQL as in the documents benchmark),
 * BENCH_MCP_QUERIES (500), BENCH_MCP_SESSIONS (50), BENCH_MCP_CALLS (10 per session).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '@kas/rest-bridge';
import { configFrom } from '@kas/server';
import { type PostgresSearchIndex, rng, searchRepository } from '@kas/server/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sql } from 'kysely';
import { ADMIN_KEY, text, VOCABULARY } from './documents.ts';

const CHUNKS = Number(process.env.BENCH_MCP_CHUNKS ?? 100_000);
const QUERIES = Number(process.env.BENCH_MCP_QUERIES ?? 500);
const SESSIONS = Number(process.env.BENCH_MCP_SESSIONS ?? 50);
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 10);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2));
}

const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-mcp-'));
const running = await startServer(
  configFrom({
    PORT: '0',
    KAS_DATA_DIR: dataDir,
    KAS_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY,
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    KAS_LOG_LEVEL: 'warn',
    // The bulk load's statements are slow by design; only the searches are measured.
    KAS_SLOW_QUERY_MS: '0',
  }),
  { worker: false },
);
const db = running.runtime.deps.db;
try {
  const random = rng(7);
  const loadStarted = performance.now();
  for (let start = 0; start < CHUNKS; start += 500) {
    const n = Math.min(500, CHUNKS - start);
    const ids = Array.from({ length: n }, (_, i) => `chunk-doc-${start + i}`);
    const titles = ids.map(() => text(random, 4));
    const contents = ids.map(() => text(random, 150));
    await db.transaction().execute(async (trx) => {
      await sql`
        INSERT INTO documents (id, semantic_id, title, link, source, from_ingestion_api, doc_updated_at,
          content_hash, chunk_count, is_public, access_user_ids, access_group_ids, tags)
        SELECT id, title, title, NULL, 'file', true, now() - (random() * interval '900 days'), '', 1, true,
          '{}', '{}', '{}'
        FROM unnest(${ids}::text[], ${titles}::text[]) AS t(id, title)`.execute(trx);
      await sql`
        INSERT INTO chunks (document_id, chunk_id, title, content, blurb, link, token_count)
        SELECT id, 0, title, content, left(content, 200), NULL, 200
        FROM unnest(${ids}::text[], ${titles}::text[], ${contents}::text[]) AS t(id, title, content)`.execute(
        trx,
      );
    });
  }
  const search = running.runtime.deps.search as PostgresSearchIndex;
  await search.maintain();
  while ((await searchRepository.staleChampionTerms(db, { minDf: 1000, limit: 1 })).length)
    await search.maintain();
  await sql`ANALYZE`.execute(db);
  console.log(
    `loaded ${CHUNKS} chunks in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s (embedded database)`,
  );

  const qrandom = rng(99);
  const pick = (lo: number, hi: number) => VOCABULARY[lo + Math.floor(qrandom() * (hi - lo))]!;
  const queries = Array.from({ length: QUERIES }, (_, i) => {
    const kind = i % 3;
    const term = () =>
      kind === 0 ? pick(5000, VOCABULARY.length) : kind === 1 ? pick(200, 2000) : pick(0, 20);
    return i % 5 === 4 ? `${term()} ${term()}` : term();
  });

  // Lean keep-alive clients (node:http), one connection each: the figures are kas's, not a client's.
  const post = (agent: Agent, path: string, headers: Record<string, string>, body: unknown) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${running.url}${path}`, { method: 'POST', headers, agent }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  const restAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const mcpAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const restHeaders = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
  const mcpHeaders = {
    ...restHeaders,
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  };
  let id = 0;
  const rest = async (query: string) => {
    const answer = await post(restAgent, '/api/admin/search', restHeaders, { query, filters: {} });
    if (answer.status !== 200) throw new Error(`REST search ${answer.status}: ${answer.body}`);
    return (JSON.parse(answer.body) as { documents: unknown[] }).documents.length;
  };
  const mcp = async (query: string, limit: number) => {
    const answer = await post(mcpAgent, '/mcp', mcpHeaders, {
      jsonrpc: '2.0',
      id: ++id,
      method: 'tools/call',
      params: { name: 'search', arguments: { query, limit } },
    });
    const reply = JSON.parse(answer.body) as {
      result?: { isError?: boolean; structuredContent?: { results: unknown[] } };
    };
    if (answer.status !== 200 || !reply.result || reply.result.isError)
      throw new Error(`MCP search ${answer.status}: ${answer.body.slice(0, 300)}`);
    return reply.result.structuredContent!.results.length;
  };
  // Warm up both paths (plans, caches, JIT).
  for (const query of queries.slice(0, 30)) {
    await rest(query);
    await mcp(query, 50);
    await mcp(query, 10);
  }
  const times = { rest: [] as number[], mcp50: [] as number[], mcp10: [] as number[] };
  let mismatched = 0;
  for (const query of queries) {
    let t = performance.now();
    const restCount = await rest(query);
    times.rest.push(performance.now() - t);
    t = performance.now();
    const mcpCount = await mcp(query, 50);
    times.mcp50.push(performance.now() - t);
    t = performance.now();
    await mcp(query, 10);
    times.mcp10.push(performance.now() - t);
    if (restCount !== mcpCount) mismatched++;
  }
  const line = (name: string, values: number[]) =>
    `${name.padEnd(34)} p50 ${percentile(values, 50)} ms  p90 ${percentile(values, 90)} ms  p99 ${percentile(values, 99)} ms`;
  console.log(`\n${QUERIES} queries (rare, mid-frequency, very common terms), one at a time:`);
  console.log(line('REST POST /api/admin/search', times.rest));
  console.log(line('MCP search (50 documents)', times.mcp50));
  console.log(line('MCP search (10 documents, default)', times.mcp10));
  const gap = percentile(times.mcp50, 50) - percentile(times.rest, 50);
  console.log(
    `MCP − REST at p50: ${gap.toFixed(2)} ms (target ≤ 5 ms: ${gap <= 5 ? 'met' : 'NOT met'}); result counts differed on ${mismatched} queries`,
  );

  // 50 concurrent sessions of the SDK's own client.
  const started = performance.now();
  let errors = 0;
  let calls = 0;
  const sessionTimes: number[] = [];
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const client = new Client({ name: `bench-${s}`, version: '1.0.0' });
      try {
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${running.url}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${ADMIN_KEY}` } },
          }),
        );
        if ((await client.listTools()).tools.length !== 4) throw new Error('tools missing');
        for (let c = 0; c < CALLS; c++) {
          const t = performance.now();
          const result = await client.callTool({
            name: 'search',
            arguments: { query: queries[(s * CALLS + c) % queries.length]! },
          });
          sessionTimes.push(performance.now() - t);
          calls++;
          if (result.isError) errors++;
        }
      } catch (error) {
        errors++;
        console.error(`session ${s}: ${(error as Error).message}`);
      } finally {
        await client.close().catch(() => {});
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `\n${SESSIONS} concurrent MCP sessions (SDK client: initialize, tools/list, ${CALLS} searches each): ` +
      `${calls} calls in ${seconds.toFixed(1)} s, ${errors} errors; call p50 ${percentile(sessionTimes, 50)} ms, p99 ${percentile(sessionTimes, 99)} ms`,
  );
  if (errors) process.exitCode = 1;
} finally {
  await running.close();
  rmSync(dataDir, { recursive: true, force: true });
}
