/**
 * `node test/soak/run.ts [--minutes 10] [--rate 20] [--postgres]`: the soak. Starts `kas serve` as a
 * child process (on the embedded database, or with `--postgres` on a throw-away real Postgres started by
 * the test harness), sends mixed traffic at a steady rate (open loop: requests start on schedule whether
 * or not earlier ones finished) — chat streams, document search, chat search, ingestion, listings — and
 * reports, per minute: the server's RSS, its open file descriptors by kind, kas's p99 latency, the p99
 * of a bare baseline, of kas's `/api/health`, and the load average. It ends with a verdict line (flat or
 * not, and the rule used) and exits 1 on any error or when not flat.
 *
 * To tell the machine from kas when latency moves: the bare baseline is a trivial HTTP server in its
 * own process, probed 5 times a second (scheduling noise of the machine); `/api/health` uses no database
 * (what blocks kas's event loop, such as PGlite work, which runs on the main thread).
 *
 * File descriptors are read every 5 s from `/proc/<pid>/fd` and sorted by kind: `http-in` (accepted
 * HTTP connections, matched through `/proc/<pid>/net/tcp*`), `pg` (connections to Postgres), `tcp-out`
 * (other outbound TCP), `unix`, `pipe`, `anon` (epoll, eventfd, timerfd), `data` (files under the data
 * directory) and `file` (other files). Accepted HTTP connections are bounded by the client's keep-alive
 * pool, which grows to the highest concurrency recently seen; the report prints that peak beside them.
 *
 * kas runs with loop-monitor.ts preloaded, which traces its event loop: per minute the report adds the
 * event-loop delay (p99 of 5-second windows / max), stalls of 100 ms or more, the main thread's CPU time
 * and the share of the minute it spent waiting for a core (run-queue wait: the machine, which the bare
 * baseline, a process that barely uses the CPU, does not feel). At the end it lists the longest stalls,
 * each split into the thread's CPU, its wait for a core, the PGlite statements and garbage collections
 * inside, and the statements whose CPU per execution grew from the second minute to the last.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
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
const dataDir = tempDir();
/** The kas process's event-loop trace (loop-monitor.ts), kept after the run for reading. */
const traceFile = `/tmp/kas-soak-trace-${process.pid}.jsonl`;
const env: Record<string, string> = {
  NODE_OPTIONS: `--import ${join(import.meta.dirname, 'loop-monitor.ts')}`,
  SOAK_TRACE_FILE: traceFile,
  KAS_DATA_DIR: dataDir,
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
const serverPort = Number(new URL(server.url).port);
const rssMb = () =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

const FD_KINDS = ['http-in', 'pg', 'tcp-out', 'unix', 'pipe', 'anon', 'data', 'file'] as const;
type FdKind = (typeof FD_KINDS)[number];
/** Socket inode → local and remote port, from the process's view of its network namespace. */
function tcpSockets(): Map<string, { local: number; remote: number }> {
  const sockets = new Map<string, { local: number; remote: number }>();
  for (const table of ['tcp', 'tcp6']) {
    let text = '';
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (address: string) => Number.parseInt(address.split(':')[1]!, 16);
      sockets.set(f[9]!, { local: port(f[1]!), remote: port(f[2]!) });
    }
  }
  return sockets;
}
/** The server's open file descriptors by kind, and the data-directory files among them. */
function fdsByKind(): { total: number; kinds: Record<FdKind, number>; dataFiles: string[] } {
  const kinds = Object.fromEntries(FD_KINDS.map((k) => [k, 0])) as Record<FdKind, number>;
  const dataFiles: string[] = [];
  let tcp: Map<string, { local: number; remote: number }> | undefined;
  const names = readdirSync(`/proc/${pid}/fd`);
  for (const name of names) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${name}`);
    } catch {
      continue; // closed between the listing and the read
    }
    let kind: FdKind;
    const socket = /^socket:\[(\d+)\]$/.exec(target);
    if (socket) {
      tcp ??= tcpSockets();
      const entry = tcp.get(socket[1]!);
      if (!entry) kind = 'unix';
      else if (entry.local === serverPort) kind = 'http-in';
      else if (postgres && entry.remote === postgres.port) kind = 'pg';
      else kind = 'tcp-out';
    } else if (target.startsWith('pipe:')) kind = 'pipe';
    else if (target.startsWith('anon_inode:')) kind = 'anon';
    else if (target.startsWith(dataDir)) {
      kind = 'data';
      dataFiles.push(target.slice(dataDir.length));
    } else kind = 'file';
    kinds[kind]++;
  }
  return { total: names.length, kinds, dataFiles };
}
await new Promise((r) => setTimeout(r, 2000));
const idle = fdsByKind();
process.stdout.write(
  `kas serve pid ${pid} on ${postgres ? 'Postgres' : 'the embedded database (PGlite)'}: idle RSS ${rssMb()} MB, ` +
    `${idle.total} open fds (${kindsText(idle.kinds)})\n`,
);

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
const started = Date.now();
const now = () => (Date.now() - started) / 1000;
/** Every latency measured, with the second it ended at. */
const timings: { t: number; ms: number; kind: string }[] = [];
async function probe(kind: 'bare' | 'health') {
  const begun = performance.now();
  const url = kind === 'bare' ? `http://127.0.0.1:${barePort}/` : `${server.url}/api/health`;
  try {
    await (await fetch(url)).text();
  } catch {
    return;
  }
  timings.push({ t: now(), ms: performance.now() - begun, kind: `probe:${kind}` });
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
const counts: Record<string, number> = {};
let inFlightCount = 0;
let peakInFlight = 0;

async function call(kind: string, method: string, path: string, body?: unknown) {
  const begun = performance.now();
  inFlightCount++;
  peakInFlight = Math.max(peakInFlight, inFlightCount);
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
  } finally {
    inFlightCount--;
  }
  timings.push({ t: now(), ms: performance.now() - begun, kind });
}

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

function kindsText(kinds: Record<FdKind, number>): string {
  return FD_KINDS.filter((k) => kinds[k] > 0)
    .map((k) => `${k} ${kinds[k]}`)
    .join(', ');
}
const percentile = (list: number[], p: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0);
};
/** A reading every 5 s: RSS, fds by kind, load average, the peak of requests in flight since the last one. */
interface Reading {
  t: number;
  rss: number;
  fds: number;
  kinds: Record<FdKind, number>;
  dataFiles: string[];
  load: number;
  peakInFlight: number;
}
const readings: Reading[] = [];
function read() {
  const fd = fdsByKind();
  readings.push({
    t: now(),
    rss: rssMb(),
    fds: fd.total,
    kinds: fd.kinds,
    dataFiles: fd.dataFiles,
    load: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
    peakInFlight,
  });
  peakInFlight = inFlightCount;
}

/** The kas process's event-loop trace so far, on this script's clock (seconds since the traffic began). */
interface TraceRecord {
  type: 'loop' | 'stall' | 'statement' | 'statements';
  t: number;
  ms?: number;
  max?: number;
  p99?: number;
  cpuMs?: number;
  runMs?: number;
  waitMs?: number;
  bySql?: Record<string, [number, number]>;
  sqlMs?: number;
  statements?: number;
  gcMs?: number;
  inside?: string[];
  sql?: string;
}
function trace(): TraceRecord[] {
  if (!existsSync(traceFile)) return [];
  return readFileSync(traceFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TraceRecord)
    .map((r) => ({ ...r, t: r.t - started / 1000 }));
}

interface Minute {
  minute: number;
  rss: number;
  fdsMin: number;
  fdsMax: number;
  /** Each kind's highest count in the minute. */
  kinds: Record<FdKind, number>;
  /** The highest number of requests in flight in this minute and the one before (the keep-alive pool's reach). */
  peakInFlight: number;
  requests: number;
  p50: number;
  p99: number;
  bare: number;
  health: number;
  load: number;
  slowest: string;
  /** kas's event-loop delay: the highest of the minute, and the highest 5-second p99. */
  loopMax: number;
  loopP99: number;
  /** Stalls of the event loop of 100 ms or more. */
  stalls: number;
  /** The share of the minute kas's main thread spent waiting for a core (the machine's contention). */
  waitPct: number;
  /** Its CPU time in the minute, ms. */
  runMs: number;
}
function summarize(minute: number): Minute {
  const from = (minute - 1) * 60;
  const to = minute * 60;
  const rs = readings.filter((r) => r.t > from && r.t <= to);
  const tr = trace().filter((x) => x.t > from && x.t <= to);
  const loops = tr.filter((x) => x.type === 'loop');
  const ts = timings.filter((x) => x.t > from && x.t <= to);
  const requests = ts.filter((x) => !x.kind.startsWith('probe:'));
  const kinds = Object.fromEntries(
    FD_KINDS.map((k) => [k, Math.max(0, ...rs.map((r) => r.kinds[k]))]),
  ) as Record<FdKind, number>;
  const slow = [...requests]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3)
    .map((x) => `${x.kind} ${Math.round(x.ms)} ms at ${Math.round(x.t)} s`)
    .join(', ');
  return {
    minute,
    rss: Math.round(rs.reduce((a, r) => a + r.rss, 0) / (rs.length || 1)),
    fdsMin: Math.min(...rs.map((r) => r.fds)),
    fdsMax: Math.max(...rs.map((r) => r.fds)),
    kinds,
    peakInFlight: Math.max(
      0,
      ...readings.filter((r) => r.t > from - 60 && r.t <= to).map((r) => r.peakInFlight),
    ),
    requests: requests.length,
    p50: percentile(
      requests.map((x) => x.ms),
      0.5,
    ),
    p99: percentile(
      requests.map((x) => x.ms),
      0.99,
    ),
    bare: percentile(
      ts.filter((x) => x.kind === 'probe:bare').map((x) => x.ms),
      0.99,
    ),
    health: percentile(
      ts.filter((x) => x.kind === 'probe:health').map((x) => x.ms),
      0.99,
    ),
    load: Math.round((rs.reduce((a, r) => a + r.load, 0) / (rs.length || 1)) * 10) / 10,
    slowest: slow,
    loopMax: Math.max(0, ...loops.map((x) => x.max ?? 0)),
    loopP99: Math.max(0, ...loops.map((x) => x.p99 ?? 0)),
    stalls: tr.filter((x) => x.type === 'stall' && (x.ms ?? 0) >= 100).length,
    waitPct: Math.round(loops.reduce((a, x) => a + (x.waitMs ?? 0), 0) / 600),
    runMs: loops.reduce((a, x) => a + (x.runMs ?? 0), 0),
  };
}
const minuteLine = (m: Minute) =>
  `  ${String(m.minute).padStart(3)}  ${String(m.rss).padStart(6)}  ${`${m.fdsMin}-${m.fdsMax}`.padStart(7)}  ` +
  `${String(m.peakInFlight).padStart(8)}  ${String(m.requests).padStart(8)}  ${String(m.p50).padStart(6)}  ` +
  `${String(m.p99).padStart(6)}  ${String(m.bare).padStart(8)}  ${String(m.health).padStart(10)}  ${m.load.toFixed(1).padStart(5)}` +
  `  ${`${m.loopP99}/${m.loopMax}`.padStart(13)}  ${String(m.stalls).padStart(6)}  ${String(m.runMs).padStart(6)}  ${`${m.waitPct}%`.padStart(5)}  ${kindsText(m.kinds)}`;
const HEADER =
  '  min  RSS MB  fds min-max  inflight  requests  p50 ms  p99 ms  bare p99  health p99  load1  loop p99/max  stalls  cpu ms  wait  fds by kind (max)\n';

read();
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
const reader = setInterval(read, 5000);
process.stdout.write(`${minutes} min at ${rate} requests/s\n${HEADER}`);
const minutesDone: Minute[] = [];
const printer = setInterval(() => {
  const m = summarize(minutesDone.length + 1);
  minutesDone.push(m);
  process.stdout.write(`${minuteLine(m)}\n        slowest: ${m.slowest}\n`);
}, 60_000);
await new Promise((r) => setTimeout(r, minutes * 60_000 + 500));
clearInterval(ticker);
clearInterval(printer);
clearInterval(prober);
clearInterval(reader);
bare.kill();
await Promise.all(inFlight);
const code = await stop(server.child);
stopAllProcesses();
await postgres?.stop();
while (minutesDone.length < minutes) minutesDone.push(summarize(minutesDone.length + 1));

/**
 * The verdict, from the second minute to the last (the first holds start-up: JIT, caches, pools):
 * - RSS: no minute's mean exceeds the second minute's by more than 10 %;
 * - fds: the floor does not rise: the last minute's lowest count is at most the second minute's highest
 *   (a leak raises the floor; the keep-alive pool following the load moves the peaks);
 * - p99: the last minute's p99 is at most 1.5 × the second minute's + 25 ms, or, when the machine got
 *   slower, kas's p99 rose by no more than 1.5 × the bare baseline's ratio;
 * - zero errors.
 */
const m2 = minutesDone[1];
const last = minutesDone.at(-1);
const lines: string[] = [];
let flat = errors === 0 && code === 0;
if (m2 && last && minutes >= 3) {
  const rssMax = Math.max(...minutesDone.slice(1).map((m) => m.rss));
  const rssOk = rssMax <= m2.rss * 1.1;
  const fdsOk = last.fdsMin <= m2.fdsMax;
  const bareRatio = m2.bare > 0 ? last.bare / m2.bare : 1;
  const p99Ok = last.p99 <= m2.p99 * 1.5 + 25 || last.p99 / Math.max(1, m2.p99) <= 1.5 * bareRatio;
  flat &&= rssOk && fdsOk && p99Ok;
  lines.push(
    `RSS: second minute ${m2.rss} MB, highest minute ${rssMax} MB, last ${last.rss} MB (rule: ≤ +10 %) — ${rssOk ? 'flat' : 'GREW'}`,
    `fds: second minute ${m2.fdsMin}-${m2.fdsMax}, last ${last.fdsMin}-${last.fdsMax} (rule: last minute's lowest ≤ second minute's highest) — ${fdsOk ? 'flat' : 'FLOOR ROSE'}`,
    `p99: second minute ${m2.p99} ms (bare ${m2.bare}), last ${last.p99} ms (bare ${last.bare}) (rule: ≤ 1.5× + 25 ms, or ≤ 1.5× the bare ratio ${bareRatio.toFixed(2)}) — ${p99Ok ? 'flat' : 'GREW'}`,
  );
  const first = readings.find((r) => r.t > 60);
  const final = readings.at(-1);
  if (first && final) {
    const opened = final.dataFiles.filter((f) => !first.dataFiles.includes(f));
    const closed = first.dataFiles.filter((f) => !final.dataFiles.includes(f));
    const deleted = final.dataFiles.filter((f) => f.endsWith('(deleted)')).length;
    lines.push(
      `data-directory files held open: ${first.dataFiles.length} at ${Math.round(first.t)} s, ${final.dataFiles.length} at the end (${deleted} of them deleted files)` +
        (opened.length
          ? `; newly held: ${opened.slice(0, 12).join(' ')}${opened.length > 12 ? ' …' : ''}`
          : '') +
        (closed.length ? `; released: ${closed.length}` : ''),
    );
  }
} else lines.push('(fewer than 3 minutes: no flatness verdict)');
/**
 * The statements that cost the most thread CPU, with their mean CPU per execution in the second minute
 * and in the last (a cost that grows with the data shows here whatever the machine's load).
 */
function statementGrowth(all: TraceRecord[]): string[] {
  const perMinute = new Map<string, Map<number, { n: number; cpu: number }>>();
  for (const x of all) {
    if (x.type !== 'statements' || x.t < 0) continue;
    const minute = Math.floor(x.t / 60) + 1;
    for (const [sql, [n, cpu]] of Object.entries(x.bySql ?? {})) {
      const minutes = perMinute.get(sql) ?? new Map<number, { n: number; cpu: number }>();
      const entry = minutes.get(minute) ?? { n: 0, cpu: 0 };
      entry.n += n;
      entry.cpu += cpu;
      minutes.set(minute, entry);
      perMinute.set(sql, minutes);
    }
  }
  if (!perMinute.size) return [];
  const total = (m: Map<number, { n: number; cpu: number }>) =>
    [...m.values()].reduce((a, e) => a + e.cpu, 0);
  const mean = (e?: { n: number; cpu: number }) => (e?.n ? (e.cpu / e.n).toFixed(2) : '-');
  return [
    `PGlite statements by thread CPU (total s; mean ms per execution in minutes 2 and ${minutes}):`,
    ...[...perMinute]
      .sort((a, b) => total(b[1]) - total(a[1]))
      .slice(0, 12)
      .map(
        ([sql, m]) =>
          `  ${(total(m) / 1000).toFixed(1)} s; ${mean(m.get(2))} → ${mean(m.get(minutes))} ms: ${sql.slice(0, 110)}`,
      ),
  ];
}
/** What blocked kas's event loop: the longest stalls and the statements that held the thread longest. */
const records = trace();
const stalls = records
  .filter((x) => x.type === 'stall' && x.t >= 0)
  .sort((a, b) => (b.ms ?? 0) - (a.ms ?? 0));
const statements = records.filter((x) => x.type === 'statement' && x.t >= 0);
const bySql = new Map<string, { n: number; total: number; max: number }>();
for (const x of statements) {
  const key = x.sql ?? '';
  const entry = bySql.get(key) ?? { n: 0, total: 0, max: 0 };
  entry.n++;
  entry.total += x.ms ?? 0;
  entry.max = Math.max(entry.max, x.ms ?? 0);
  bySql.set(key, entry);
}
lines.push(
  `event-loop stalls during the traffic ≥ 50 ms: ${stalls.length}, ≥ 100 ms: ${stalls.filter((x) => (x.ms ?? 0) >= 100).length} (trace: ${traceFile})`,
  ...stalls
    .slice(0, 10)
    .map(
      (x) =>
        `  ${x.ms} ms at ${Math.round(x.t)} s: thread CPU ${x.cpuMs} ms, waiting for a core ${x.waitMs} ms; ${x.statements} statements ${x.sqlMs} ms, GC ${x.gcMs} ms; longest: ${(x.inside ?? []).join(' | ')}`,
    ),
  ...statementGrowth(records),
  'PGlite statements that held the thread ≥ 20 ms (count, total, max):',
  ...[...bySql]
    .sort((a, b) => b[1].total - a[1].total)
    .slice(0, 10)
    .map(([sql, e]) => `  ${e.n}× ${e.total} ms, max ${e.max} ms: ${sql}`),
);
process.stdout.write(
  `\n${postgres ? 'Postgres' : 'PGlite'}, ${minutes} min at ${rate} requests/s\n${HEADER}${minutesDone.map(minuteLine).join('\n')}\n` +
    `requests ${JSON.stringify(counts)}\nerrors ${errors}${errorSamples.length ? `\n  ${errorSamples.join('\n  ')}` : ''}\n` +
    `SIGTERM exit code ${code}\n${lines.join('\n')}\n` +
    `VERDICT: ${minutes < 3 ? 'none (run at least 3 minutes)' : flat ? 'FLAT' : 'NOT FLAT'} from the second minute to the last (RSS ≤ +10 %, fd floor not above the second minute's peak, p99 ≤ 1.5× + 25 ms or within 1.5× the bare baseline's change, 0 errors)\n`,
);
process.exitCode = flat ? 0 : 1;
