/**
 * Preloaded into the soak's `kas serve` (`node --import test/soak/loop-monitor.ts`): measures the
 * event loop and attributes its stalls. Writes JSON lines to the file named by `SOAK_TRACE_FILE`:
 * - `{type:'loop', t, max, p99, mean, runMs, waitMs}` every 5 s: the event-loop delay
 *   (`monitorEventLoopDelay`, ms), and how long the main thread ran and how long it waited for a core
 *   (run-queue wait from `/proc/self/task/<tid>/schedstat`: the machine, not kas);
 * - `{type:'stall', t, ms, …}` whenever a 10 ms timer fired more than 50 ms late (`t` is when the stall
 *   began), with what filled it: the main thread's CPU time and run-queue wait meanwhile, the PGlite
 *   statements (each runs the WebAssembly Postgres on this thread; their count, time, the longest)
 *   and garbage collections;
 * - `{type:'statement', t, ms, cpuMs, sql}` for every PGlite statement that held the thread
 *   `SOAK_TRACE_STATEMENT_MS` (default 20) or more, and `{type:'statements', t, bySql}` every 5 s: per
 *   statement text, count and total thread CPU (to see a statement's cost grow regardless of the load).
 * Times are epoch seconds. Lab instrumentation only, never part of kas.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';

const file = process.env.SOAK_TRACE_FILE;
const STALL_MS = 50;
const STATEMENT_MS = Number(process.env.SOAK_TRACE_STATEMENT_MS ?? 20);
const now = () => performance.now();
const write = (record: Record<string, unknown>) => {
  if (file) appendFileSync(file, `${JSON.stringify(record)}\n`);
};
/** Epoch seconds of a `performance.now()` reading (the soak lines them up with its own clock). */
const seconds = (ms: number) => Math.round(performance.timeOrigin + ms) / 1000;
const threadCpuMs = () => {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
};
/** The main thread's time on a core and waiting for one, in ms (Linux schedstat). */
const schedstatFile = `/proc/self/task/${process.pid}/schedstat`;
const schedstat = () => {
  try {
    const [run, wait] = readFileSync(schedstatFile, 'utf8').split(' ').map(Number);
    return { run: (run ?? 0) / 1e6, wait: (wait ?? 0) / 1e6 };
  } catch {
    return { run: 0, wait: 0 };
  }
};
const round = (ms: number) => Math.round(ms * 10) / 10;

/** Work recently done on this thread: [start, end, label, kind]. Pruned as the loop moves on. */
const recent: [number, number, string, 'sql' | 'gc'][] = [];
/** Per statement text since the last report: count and thread CPU. */
let bySql = new Map<string, { n: number; cpu: number }>();

if (!process.env.DATABASE_URL) {
  const { PGlite } = await import('@electric-sql/pglite');
  const proto = PGlite.prototype as unknown as {
    execProtocolStream(message: Uint8Array, options?: unknown): Promise<unknown>;
  };
  const original = proto.execProtocolStream;
  const decoder = new TextDecoder();
  const text = (bytes: Uint8Array) => decoder.decode(bytes).replace(/\s+/g, ' ').trim().slice(0, 160);
  /** The statement under way: from its Parse (or simple Query) message to its Sync. */
  let current = { sql: '', begun: 0, ended: 0, wall: 0, cpu: 0 };
  const finish = () => {
    if (!current.sql) return;
    recent.push([current.begun, current.ended, `sql ${Math.round(current.wall)} ms: ${current.sql}`, 'sql']);
    const entry = bySql.get(current.sql) ?? { n: 0, cpu: 0 };
    entry.n++;
    entry.cpu += current.cpu;
    bySql.set(current.sql, entry);
    if (current.wall >= STATEMENT_MS)
      write({
        type: 'statement',
        t: seconds(current.begun),
        ms: Math.round(current.wall),
        cpuMs: Math.round(current.cpu),
        sql: current.sql,
      });
    current = { sql: '', begun: 0, ended: 0, wall: 0, cpu: 0 };
  };
  proto.execProtocolStream = async function (this: unknown, message: Uint8Array, options?: unknown) {
    const type = message[0];
    // Parse: 'P', length, statement name\0, query\0, …; Query: 'Q', length, query\0.
    if (type === 0x50) {
      finish();
      const nameEnd = message.indexOf(0, 5);
      current.sql = text(message.subarray(nameEnd + 1, message.indexOf(0, nameEnd + 1)));
    } else if (type === 0x51) {
      finish();
      current.sql = text(message.subarray(5, message.indexOf(0, 5)));
    }
    const begun = now();
    const cpu = threadCpuMs();
    try {
      return await original.call(this, message, options);
    } finally {
      const ended = now();
      if (!current.begun) current.begun = begun;
      current.ended = ended;
      current.wall += ended - begun;
      current.cpu += threadCpuMs() - cpu;
      // Sync ('S') ends an extended-protocol statement; a simple query is complete in one message.
      if (type === 0x53 || type === 0x51) finish();
    }
  };
}

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.duration >= 5)
      recent.push([
        entry.startTime,
        entry.startTime + entry.duration,
        `gc ${Math.round(entry.duration)} ms`,
        'gc',
      ]);
  }
}).observe({ entryTypes: ['gc'] });

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
let lastReport = schedstat();
setInterval(() => {
  const sched = schedstat();
  write({
    type: 'loop',
    t: seconds(now()),
    max: Math.round(histogram.max / 1e6),
    p99: Math.round(histogram.percentile(99) / 1e6),
    mean: Math.round(histogram.mean / 1e5) / 10,
    runMs: Math.round(sched.run - lastReport.run),
    waitMs: Math.round(sched.wait - lastReport.wait),
  });
  write({
    type: 'statements',
    t: seconds(now()),
    bySql: Object.fromEntries([...bySql].map(([sql, e]) => [sql, [e.n, round(e.cpu)]])),
  });
  bySql = new Map();
  lastReport = sched;
  histogram.reset();
}, 5000).unref();

let last = now();
let lastCpu = threadCpuMs();
let lastSched = schedstat();
setInterval(() => {
  const at = now();
  const cpu = threadCpuMs();
  const sched = schedstat();
  const late = at - last - 10;
  if (late > STALL_MS) {
    const inside = recent.filter(([s, e]) => e > last && s < at);
    const within = ([s, e]: [number, number, string, string]) => Math.min(e, at) - Math.max(s, last);
    const sql = inside.filter((x) => x[3] === 'sql');
    const gc = inside.filter((x) => x[3] === 'gc');
    write({
      type: 'stall',
      t: seconds(last),
      ms: Math.round(late),
      cpuMs: Math.round(cpu - lastCpu),
      waitMs: Math.round(sched.wait - lastSched.wait),
      sqlMs: Math.round(sql.reduce((sum, x) => sum + within(x), 0)),
      statements: sql.length,
      gcMs: Math.round(gc.reduce((sum, x) => sum + within(x), 0)),
      inside: inside
        .sort((a, b) => b[1] - b[0] - (a[1] - a[0]))
        .slice(0, 5)
        .map((x) => x[2]),
    });
  }
  last = at;
  lastCpu = cpu;
  lastSched = sched;
  while (recent.length && recent[0]![1] < at - 1000) recent.shift();
}, 10).unref();
