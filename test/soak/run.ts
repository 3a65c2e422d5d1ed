/**
 * `node test/soak/run.ts [--minutes 10] [--rate 20] [--postgres]`: the soak. Starts `kas serve` as a
 * child process, sends mixed traffic at a steady rate (open loop: requests start on schedule whether or
 * not earlier ones finished) — chat streams, document search, chat search, ingestion, listings — and
 * every 30 s samples the server's RSS, open file descriptors and the latency percentiles of that
 * window. Prints a table, compares the second minute with the last, and exits 1 on any error.
 *
 * To tell the machine from kas when latency moves, every window also reports: the load average; the
 * p99 of a bare baseline (a trivial HTTP server in its own process, probed 5 times a second: scheduling
 * noise of the machine); the p99 of kas's `/api/health` (no database: what blocks kas's event loop, such
 * as PGlite work, which runs on the main thread); the p99 per kind of request; and the slowest requests.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../harness/postgres.ts';
import { serve, stop, stopAllProcesses, tempDir } from '../harness/process.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '20' },
    postgres: { type: 'boolean', default: false },
  },
});
const KEY = `svck-${'p'.repeat(43)}`;
const minutes = Number(values.minutes);
const rate = Number(values.rate);
const env: Record<string, string> = {
  KAS_DATA_DIR: tempDir(),
  KAS_BOOTSTRAP_ADMIN_KEY: KEY,
  KAS_LOG_LEVEL: 'warn',
  KAS_RATE_LIMIT_PER_MINUTE: '0',
};
const postgres = values.postgres ? await startPostgres() : undefined;
if (postgres) {
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE kas_soak');
  await admin.end();
  env.DATABASE_URL = postgres.urlFor('kas_soak');
  env.KAS_ENCRYPTION_KEY = Buffer.alloc(32, 3).toString('base64');
}
const server = await serve(env, 60_000);
const pid = server.child.pid!;
const rssMb = () =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
const fds = () => readdirSync(`/proc/${pid}/fd`).length;
await new Promise((r) => setTimeout(r, 2000));
process.stdout.write(`kas serve pid ${pid}: idle RSS ${rssMb()} MB, ${fds()} open fds\n`);

/** The bare baseline: a trivial HTTP server in a process of its own. */
const bare = spawn(
  process.execPath,
  [
    '-e',
    "const s=require('node:http').createServer((q,r)=>r.end('ok')).listen(0,'127.0.0.1',()=>console.log(s.address().port))",
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const barePort = await new Promise<number>((resolve) =>
  bare.stdout!.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))),
);
const probes: Record<'bare' | 'health', number[]> = { bare: [], health: [] };
async function probe(kind: 'bare' | 'health') {
  const started = performance.now();
  const url = kind === 'bare' ? `http://127.0.0.1:${barePort}/` : `${server.url}/api/health`;
  try {
    await (await fetch(url)).text();
  } catch {
    return;
  }
  probes[kind].push(performance.now() - started);
}

const WORDS = [
  'invoice',
  'rollout',
  'kubernetes',
  'holiday',
  'budget',
  'quarterly',
  'incident',
  'onboarding',
];
const word = (i: number) => WORDS[i % WORDS.length]!;
let sequence = 0;
let errors = 0;
const errorSamples: string[] = [];
let window: number[] = [];
/** This window's latencies per kind, and its slowest requests. */
let byKind: Record<string, number[]> = {};
let slowest: { ms: number; kind: string; at: number }[] = [];
const counts: Record<string, number> = {};

async function call(kind: string, method: string, path: string, body?: unknown) {
  const started = performance.now();
  try {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${res.status} ${text.slice(0, 200)}`);
    if (kind === 'chat') {
      const lines = text.trim().split('\n');
      if (lines.some((l) => l.includes('"error_code"')) || !lines.at(-1)?.includes('"stop"'))
        throw new Error(`chat stream did not end with stop: ${lines.at(-1)?.slice(0, 200)}`);
    }
    counts[kind] = (counts[kind] ?? 0) + 1;
  } catch (error) {
    errors++;
    if (errorSamples.length < 10) errorSamples.push(`${kind} ${method} ${path}: ${(error as Error).message}`);
  }
  const ms = performance.now() - started;
  window.push(ms);
  const ofKind = byKind[kind] ?? [];
  byKind[kind] = ofKind;
  ofKind.push(ms);
  slowest.push({ ms, kind, at: Math.round((Date.now() - soakStart) / 100) / 10 });
  if (slowest.length > 20) slowest = slowest.sort((a, b) => b.ms - a.ms).slice(0, 5);
}
const soakStart = Date.now();

/** One scheduled request of the mix: 10% chat streams, 25% search, 15% ingestion, 50% listings. */
function fire() {
  const i = sequence++;
  const slot = i % 20;
  if (slot < 2)
    return call('chat', 'POST', '/api/chat/send-chat-message', {
      message: `What do we know about the ${word(i)} plan?`,
      chat_session_info: {},
    });
  if (slot < 5) return call('search', 'POST', '/api/admin/search', { query: `${word(i)} plan`, filters: {} });
  if (slot < 7) return call('chat-search', 'GET', `/api/chat/search?query=${word(i)}`);
  if (slot < 10)
    return call('ingest', 'POST', '/api/svc-api/ingestion', {
      document: {
        id: `soak-${i}`,
        semantic_identifier: `Soak document ${i}`,
        sections: [
          {
            text: `The ${word(i)} plan, revision ${i}. ${word(i + 1)} and ${word(i + 3)} notes follow. `.repeat(
              20,
            ),
          },
        ],
      },
    });
  if (slot < 13) return call('list-sessions', 'GET', '/api/chat/get-user-chat-sessions?page_size=20');
  if (slot < 16) return call('list-agents', 'GET', '/api/agents');
  if (slot < 18) return call('list-document-sets', 'GET', '/api/manage/document-set');
  return call('me', 'GET', '/api/me');
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
interface Sample {
  at: number;
  rss: number;
  fds: number;
  p50: number;
  p99: number;
  requests: number;
  load: number;
  bare: number;
  health: number;
}
const samples: Sample[] = [];
const started = Date.now();
const inFlight = new Set<Promise<void>>();
const ticker = setInterval(() => {
  const p = fire();
  inFlight.add(p);
  void p.finally(() => inFlight.delete(p));
}, 1000 / rate);
const prober = setInterval(() => {
  void probe('bare');
  void probe('health');
}, 200);
process.stdout.write(
  `${minutes} min at ${rate} requests/s\n  t(s)  RSS MB  fds  p50 ms  p99 ms  requests  load1  bare p99  health p99\n`,
);
const sampler = setInterval(() => {
  const sorted = window.sort((a, b) => a - b);
  const p99Of = (list: number[]) =>
    Math.round(
      percentile(
        list.sort((a, b) => a - b),
        0.99,
      ),
    );
  const sample = {
    at: Math.round((Date.now() - started) / 1000),
    rss: rssMb(),
    fds: fds(),
    p50: Math.round(percentile(sorted, 0.5)),
    p99: Math.round(percentile(sorted, 0.99)),
    requests: sorted.length,
    load: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
    bare: p99Of(probes.bare),
    health: p99Of(probes.health),
  };
  const kinds = Object.entries(byKind)
    .map(([kind, list]) => `${kind} ${p99Of(list)}`)
    .join(', ');
  const slow = slowest
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3)
    .map((r) => `${r.kind} ${Math.round(r.ms)} ms at ${r.at} s`)
    .join(', ');
  window = [];
  byKind = {};
  slowest = [];
  probes.bare = [];
  probes.health = [];
  samples.push(sample);
  process.stdout.write(
    `  ${String(sample.at).padStart(4)}  ${String(sample.rss).padStart(6)}  ${String(sample.fds).padStart(3)}  ${String(sample.p50).padStart(6)}  ${String(sample.p99).padStart(6)}  ${String(sample.requests).padStart(8)}  ${sample.load.toFixed(1).padStart(5)}  ${String(sample.bare).padStart(8)}  ${String(sample.health).padStart(10)}\n` +
      `        p99 by kind: ${kinds}\n        slowest: ${slow}\n`,
  );
}, 30_000);
await new Promise((r) => setTimeout(r, minutes * 60_000));
clearInterval(ticker);
clearInterval(sampler);
clearInterval(prober);
bare.kill();
await Promise.all(inFlight);
const code = await stop(server.child);
stopAllProcesses();
await postgres?.stop();

const minute2 = samples.filter((s) => s.at > 60 && s.at <= 120);
const last = samples.slice(-2);
const avg = (list: Sample[], key: keyof Sample) =>
  Math.round(list.reduce((a, s) => a + s[key], 0) / (list.length || 1));
process.stdout.write(
  `requests ${JSON.stringify(counts)}\nerrors ${errors}${errorSamples.length ? `\n  ${errorSamples.join('\n  ')}` : ''}\n` +
    `second minute: RSS ${avg(minute2, 'rss')} MB, fds ${avg(minute2, 'fds')}, p99 ${avg(minute2, 'p99')} ms, ` +
    `bare p99 ${avg(minute2, 'bare')} ms, health p99 ${avg(minute2, 'health')} ms, load ${avg(minute2, 'load')}\n` +
    `last minute:   RSS ${avg(last, 'rss')} MB, fds ${avg(last, 'fds')}, p99 ${avg(last, 'p99')} ms, ` +
    `bare p99 ${avg(last, 'bare')} ms, health p99 ${avg(last, 'health')} ms, load ${avg(last, 'load')}\n` +
    `SIGTERM exit code ${code}\n`,
);
process.exitCode = errors || code !== 0 ? 1 : 0;
