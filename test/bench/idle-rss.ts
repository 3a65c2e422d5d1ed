/**
 * Idle memory of `kas serve` on the embedded database (issue 10): RSS 10 s after /api/health answers,
 * on a first start (database created) and a restart, with kas's memory settings and with the old
 * defaults (KAS_MEMORY_TUNING=false, 128 MB buffer cache); then where the memory goes, stage by stage,
 * in a process that loads kas the same way. Linux only (reads /proc). `node test/bench/idle-rss.ts`
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, tunedRestart } from '@kas/server/startup';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'packages/rest-bridge/src/cli.ts');
const SETTLE_MS = Number(process.env.BENCH_IDLE_SETTLE_MS ?? 10_000);

const status = (pid: number | string) => readFileSync(`/proc/${pid}/status`, 'utf8');
const field = (text: string, name: string) =>
  Math.round(Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)?.[1]) / 1024);

async function idle(dataDir: string, env: Record<string, string>, port: number) {
  const child: ChildProcess = spawn(process.execPath, [cli, 'serve'], {
    env: { ...process.env, KAS_DATA_DIR: dataDir, PORT: String(port), KAS_LOG_LEVEL: 'warn', ...env },
    stdio: 'ignore',
  });
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`kas serve exited ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/health`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  const startMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const text = status(child.pid!);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return { startMs, rss: field(text, 'VmRSS'), hwm: field(text, 'VmHWM') };
}

const STAGES = `
import { readFileSync } from 'node:fs';
const f = (n) => Math.round(Number(new RegExp(n + ':\\\\s+(\\\\d+)').exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024);
const mb = (n) => Math.round(n / 2 ** 20);
const line = (stage) => { const m = process.memoryUsage(); console.log(JSON.stringify({ stage, rss: f('VmRSS'), heap: mb(m.heapTotal), external: mb(m.external) })); };
line('node');
const server = await import('@kas/server');
line('kas modules imported');
server.applyMemorySettings(server.configFrom({}));
const runtime = await server.createRuntime(server.configFrom({ KAS_DATA_DIR: process.argv[1], KAS_LOG_LEVEL: 'warn' }));
line('database opened and migrated, runtime built');
server.releaseStartupGarbage();
line('after start-up garbage released');
await server.documentsService.ingestDocument({
  ctx: runtime.deps,
  input: { document: { semantic_identifier: 't', sections: [{ text: 'one sentence.', link: null }] } },
});
line('tokenizer loaded (first ingestion or chat)');
await runtime.close();
`;

async function stages(dataDir: string) {
  // Started as `kas serve` restarts itself: with kas's V8 options and allocator setting.
  const tuned = tunedRestart(configFrom({}), [], {});
  const child = spawn(
    process.execPath,
    [...(tuned?.flags ?? []), '--input-type=module', '-e', STAGES, dataDir],
    {
      cwd: join(root, 'packages/server'),
      env: { ...process.env, ...tuned?.env, KAS_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  await new Promise((r) => child.once('exit', r));
  return out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { stage: string; rss: number; heap: number; external: number });
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
for (const [name, env] of [
  ['kas settings', {}],
  [
    'old defaults (KAS_MEMORY_TUNING=false, KAS_PGLITE_SHARED_BUFFERS_MB=128)',
    { KAS_MEMORY_TUNING: 'false', KAS_PGLITE_SHARED_BUFFERS_MB: '128' },
  ],
] as const) {
  const dir = mkdtempSync(join(tmpdir(), 'kas-idle-'));
  try {
    const first = await idle(dir, env, 18_900);
    const again = await idle(dir, env, 18_901);
    console.log(
      `${name}: first start ${first.rss} MB idle (peak ${first.hwm}, up in ${(first.startMs / 1000).toFixed(1)} s); ` +
        `restart ${again.rss} MB idle (peak ${again.hwm}, up in ${(again.startMs / 1000).toFixed(1)} s); load ${load()}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const dir = mkdtempSync(join(tmpdir(), 'kas-idle-'));
try {
  await stages(dir); // creates the database
  console.log('where the memory goes (restart, in-process; RSS / V8 heap / external incl. PGlite wasm, MB):');
  for (const s of await stages(dir)) console.log(`  ${s.stage}: ${s.rss} / ${s.heap} / ${s.external}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
