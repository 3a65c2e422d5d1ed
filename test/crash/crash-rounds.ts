/**
 * Crash without loss: SIGKILL `kas serve` while 8 clients ingest documents, restart it on the same data,
 * and check that every document whose POST was answered 2xx is there and searchable, that nothing is
 * half-written, and that restarts do not get slower. Used by the e2e test (few documents) and by
 * `node test/crash/run.ts` (10,000).
 */
import { join } from 'node:path';
import { openPGlite } from '@kas/server';
import pg from 'pg';
import { serve, stop } from '../harness/process.ts';

export const CRASH_KEY = `svck-${'k'.repeat(43)}`;

export interface CrashOptions {
  /** `kas serve` settings: KAS_DATA_DIR, and DATABASE_URL with KAS_ENCRYPTION_KEY for Postgres. */
  env: Record<string, string>;
  rounds: number;
  /** Documents acknowledged per round before the kill. */
  docsPerRound: number;
  clients?: number;
  log?(line: string): void;
}

export interface CrashReport {
  acknowledged: number;
  /** Milliseconds until /api/health answered: each round's start, and its restart after the kill. */
  startupMs: number[];
  restartMs: number[];
  missing: string[];
  unsearchable: string[];
  /** What admin search answered for the first few unsearchable documents (status, documents found). */
  unsearchableAnswers: string[];
  halfWritten: Record<string, number>;
  ingestPerSecond: number[];
}

function docOf(id: string, word: string) {
  return {
    document: {
      id,
      semantic_identifier: `Crash document ${id}`,
      sections: [{ text: `This document carries the marker ${word} and some ordinary text about ${id}.` }],
    },
  };
}

const markerOf = (id: string) => `zq${id.replace(/[^a-z0-9]/g, '')}`;

/** Queries that find rows no committed ingestion can leave behind: each must count 0. */
const HALF_WRITTEN: Record<string, string> = {
  'chunks without their document':
    'SELECT count(*)::int AS n FROM chunks c LEFT JOIN documents d ON d.id = c.document_id WHERE d.id IS NULL',
  'documents without chunks':
    'SELECT count(*)::int AS n FROM documents d WHERE d.from_ingestion_api AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)',
  'documents without their pair':
    'SELECT count(*)::int AS n FROM documents d WHERE NOT EXISTS (SELECT 1 FROM document_by_cc_pair p WHERE p.document_id = d.id)',
  'index rows without chunks':
    'SELECT count(*)::int AS n FROM search_champions s LEFT JOIN chunks c ON c.document_id = s.document_id AND c.chunk_id = s.chunk_id WHERE c.document_id IS NULL',
  'chunk count differs from the index statistics': `SELECT abs((SELECT count(*) FROM chunks) - (
      coalesce((SELECT df FROM search_terms WHERE term = E'\\x01n'), 0) +
      coalesce((SELECT sum(delta) FROM search_term_deltas WHERE term = E'\\x01n'), 0)))::int AS n`,
};

async function halfWritten(env: Record<string, string>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  if (env.DATABASE_URL) {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    for (const [name, query] of Object.entries(HALF_WRITTEN))
      counts[name] = (await client.query<{ n: number }>(query)).rows[0]!.n;
    await client.end();
  } else {
    const pglite = await openPGlite(join(env.KAS_DATA_DIR!, 'pgdata'));
    for (const [name, query] of Object.entries(HALF_WRITTEN))
      counts[name] = (await pglite.query<{ n: number }>(query)).rows[0]!.n;
    await pglite.close();
  }
  return counts;
}

async function post(url: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CRASH_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

export async function runCrashRounds(options: CrashOptions): Promise<CrashReport> {
  const log = options.log ?? (() => {});
  // One key makes every request of three rounds (~400 within a minute, plus the points each killed
  // process had reserved): the per-key limit would answer 429 to the last searches on Postgres, where
  // it is counted across restarts. Losing nothing is what is measured here, not the limit.
  const env = {
    KAS_BOOTSTRAP_ADMIN_KEY: CRASH_KEY,
    KAS_LOG_LEVEL: 'warn',
    KAS_RATE_LIMIT_PER_MINUTE: '0',
    ...options.env,
  };
  const acknowledged: string[] = [];
  const report: CrashReport = {
    acknowledged: 0,
    startupMs: [],
    restartMs: [],
    missing: [],
    unsearchable: [],
    unsearchableAnswers: [],
    halfWritten: {},
    ingestPerSecond: [],
  };
  for (let round = 0; round < options.rounds; round++) {
    const server = await serve(env, 60_000);
    report.startupMs.push(server.startupMs);
    log(`round ${round}: started in ${server.startupMs} ms`);
    let acked = 0;
    let killed = false;
    const started = performance.now();
    const client = async (c: number) => {
      for (let n = 0; !killed; n++) {
        const id = `r${round}c${c}n${n}`;
        try {
          const res = await post(server.url, '/api/svc-api/ingestion', docOf(id, markerOf(id)));
          await res.arrayBuffer();
          if (res.ok) {
            acknowledged.push(id);
            acked++;
            if (acked >= options.docsPerRound && !killed) {
              killed = true;
              // SIGKILL at once, with the other clients' requests in flight.
              server.child.kill('SIGKILL');
            }
          }
        } catch {
          // The connection died with the server: this request was never acknowledged.
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: options.clients ?? 8 }, (_, c) => client(c)));
    const seconds = (performance.now() - started) / 1000;
    report.ingestPerSecond.push(Math.round(acked / seconds));
    await new Promise<void>((resolve) => {
      if (server.child.exitCode !== null || server.child.signalCode) resolve();
      else server.child.once('exit', () => resolve());
    });
    log(`round ${round}: ${acked} acknowledged (${report.ingestPerSecond.at(-1)}/s), killed`);

    // Restart on the same data: the dead process's lock is taken over.
    const restarted = await serve(env, 60_000);
    const restartedAt = performance.now();
    report.restartMs.push(restarted.startupMs);
    log(`round ${round}: restarted in ${restarted.startupMs} ms`);
    const listed = await fetch(`${restarted.url}/api/svc-api/ingestion`, {
      headers: { authorization: `Bearer ${CRASH_KEY}` },
    });
    const present = new Set(((await listed.json()) as { document_id: string }[]).map((d) => d.document_id));
    for (const id of acknowledged) if (!present.has(id)) report.missing.push(id);
    const sample = acknowledged.length <= 400 ? acknowledged : acknowledged.filter((_, i) => i % 25 === 0);
    for (const id of sample) {
      const res = await post(restarted.url, '/api/admin/search', { query: markerOf(id), filters: {} });
      const found = (await res.json()) as { documents?: { document_id: string }[] };
      if (!found.documents?.some((d) => d.document_id === id)) {
        report.unsearchable.push(id);
        if (report.unsearchableAnswers.length < 3)
          report.unsearchableAnswers.push(
            `${id}: ${res.status} ${JSON.stringify(found).slice(0, 300)} at ${Math.round(performance.now() - restartedAt)} ms after the restart`,
          );
      }
    }
    const code = await stop(restarted.child);
    if (code !== 0) throw new Error(`kas serve exited ${code} on SIGTERM after the restart`);
    for (const [name, n] of Object.entries(await halfWritten(options.env)))
      report.halfWritten[name] = (report.halfWritten[name] ?? 0) + n;
    log(`round ${round}: ${present.size} documents listed, ${report.missing.length} missing`);
  }
  report.acknowledged = acknowledged.length;
  return report;
}
