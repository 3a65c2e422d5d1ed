/**
 * Process-wide memory settings of a kas process (the API, the worker, or both), applied first thing on
 * start. Measured on the 20,000-page crawl (test/bench/connectors.ts): V8's heap grew lazily to 280–370
 * MB for a live set under 100 MB; and V8's optimising compiler, compiling one large function of
 * PGlite's WebAssembly (~105 KB of code, hot from the first queries), takes ~600 MB of compiler memory
 * for ~1 s (`--turbo-stats-wasm`: Turboshaft's first graph-copying phase) — the process's whole peak:
 * 726 MB on a restart, 1,024 MB on a first start, when it lives at 220–360 MB before and after. No V8
 * option short of `--liftoff-only` bounds it (none of loop unrolling/peeling, inlining, wasm-opt, the
 * tiering budget, eager or lazy compilation, compilation tasks, code space reservation, GC or malloc
 * options changed it; upstream: nodejs/node#63421). See docs/configuration.md's memory section.
 */
import { totalmem } from 'node:os';
import process from 'node:process';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Config } from './config.ts';

let applied = false;

/**
 * How far the old generation grows beyond its live set before a full collection
 * (`KAS_HEAP_GROWTH_PERCENT`; 0: V8's own choice). 30 % on the embedded database, the small-footprint
 * setting; with Postgres V8's own: at 30 % batch ingestion ran a full collection (marking the
 * tokenizer's tables among the rest) every few hundred documents, ~0.06 ms of CPU per document.
 */
export function heapGrowthPercent(config: Pick<Config, 'KAS_HEAP_GROWTH_PERCENT' | 'DATABASE_URL'>): number {
  return config.KAS_HEAP_GROWTH_PERCENT ?? (config.DATABASE_URL ? 0 : 30);
}
let collect: (() => void) | undefined;

/**
 * Tunes V8 for this process: the old generation grows to at most `1 + KAS_HEAP_GROWTH_PERCENT/100`
 * times the live set before the next full collection (V8 picks 1.1–4× itself), and WebAssembly is
 * optimised in one background task. Must run before the embedded database is opened. Idempotent.
 */
export function applyMemorySettings(
  config: Pick<Config, 'KAS_MEMORY_TUNING' | 'KAS_HEAP_GROWTH_PERCENT' | 'DATABASE_URL'>,
): void {
  if (applied || !config.KAS_MEMORY_TUNING) return;
  applied = true;
  const growth = heapGrowthPercent(config);
  if (growth > 0) setFlagsFromString(`--heap-growing-percent=${growth}`);
  // One compile job at a time: the large function's ~600 MB is then not joined by others' (measured:
  // the peak is that one function's either way, so this bounds rather than lowers it).
  setFlagsFromString('--wasm-num-compilation-tasks=1');
  // A collector to call once after start-up (below); V8 offers it only through this flag.
  setFlagsFromString('--expose-gc');
  collect = runInNewContext('gc') as () => void;
}

/**
 * One full collection after start-up: the first start creates the embedded database (initdb) and
 * leaves ~400 MB of garbage that V8 would otherwise keep until its next full collection.
 */
export function releaseStartupGarbage(): void {
  collect?.();
}

/** Marks a process that already restarted itself with the settings below. */
const TUNED_MARK = 'KAS_PROCESS_TUNED';

/**
 * Below this much memory for the process, `KAS_WASM_OPTIMIZE=auto` keeps the embedded database's
 * WebAssembly on V8's baseline compiler: with the optimising compiler the process peaks at ~0.75–1 GB.
 */
export const WASM_OPTIMIZE_MIN_BYTES = 1536 * 2 ** 20;

/** Memory this process may use: its cgroup limit when it has one, else the machine's memory. */
export function processMemoryLimit(): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  const total = totalmem();
  return constrained > 0 ? Math.min(constrained, total) : total;
}

/** Below this much memory for the process, `KAS_PGLITE_TEXT_THREAD=auto` runs no text thread. */
export const TEXT_THREAD_MIN_BYTES = 3 * 2 ** 30;

/** Whether bulk loads on the embedded database vectorise chunks on a thread of their own (`KAS_PGLITE_TEXT_THREAD`). */
export function usesTextThread(
  config: Pick<Config, 'KAS_PGLITE_TEXT_THREAD' | 'DATABASE_URL'>,
  memoryLimit: number,
  cores: number,
): boolean {
  if (config.DATABASE_URL) return false;
  if (config.KAS_PGLITE_TEXT_THREAD === 'auto') return cores >= 2 && memoryLimit >= TEXT_THREAD_MIN_BYTES;
  return config.KAS_PGLITE_TEXT_THREAD === 'true';
}

/** Whether V8 may optimise the embedded database's WebAssembly (see `KAS_WASM_OPTIMIZE`). */
export function optimizesWasm(
  config: Pick<Config, 'KAS_WASM_OPTIMIZE' | 'DATABASE_URL'>,
  memoryLimit: number,
): boolean {
  if (config.DATABASE_URL) return true; // no embedded database, nothing to decide
  if (config.KAS_WASM_OPTIMIZE === 'auto') return memoryLimit >= WASM_OPTIMIZE_MIN_BYTES;
  return config.KAS_WASM_OPTIMIZE === 'true';
}

/** False when this process runs WebAssembly on V8's baseline compiler only. */
export function wasmOptimizing(): boolean {
  return !process.execArgv.includes('--liftoff-only');
}

type TuningConfig = Pick<
  Config,
  'KAS_MEMORY_TUNING' | 'KAS_HEAP_SEMI_SPACE_MB' | 'KAS_MAX_HEAP_MB' | 'KAS_WASM_OPTIMIZE' | 'DATABASE_URL'
>;

/**
 * The young generation's semi-space (`KAS_HEAP_SEMI_SPACE_MB`, else by database). Small on the embedded
 * database, whose process also holds the database and is the small-footprint setting. With Postgres a
 * larger one: batch ingestion allocates ~50 KB per document that lives until its group commits (~0.5 s),
 * and with 8 MB the young generation was collected every ~12 ms, promoting those documents to the old
 * generation; 32 MB took kas's CPU per document from 0.46 to 0.37 ms (`batch-ingestion` bench).
 */
export function semiSpaceMb(config: Pick<Config, 'KAS_HEAP_SEMI_SPACE_MB' | 'DATABASE_URL'>): number {
  return config.KAS_HEAP_SEMI_SPACE_MB ?? (config.DATABASE_URL ? 32 : 8);
}

/**
 * The V8 options and environment a kas process restarts itself with, or null when it need not:
 * - `--max-semi-space-size` ({@link semiSpaceMb}): V8's young generation otherwise takes ~100 MB;
 * - `--max-old-space-size` (KAS_MAX_HEAP_MB), a hard cap, when set;
 * - `--liftoff-only` when the embedded database's WebAssembly is not to be optimised ({@link optimizesWasm}):
 *   the crawl then peaks at ~320 MB for good, ~30 % slower (it can only be given on the command line);
 * - `MALLOC_MMAP_THRESHOLD_`: glibc otherwise raises its mmap threshold after the first large free and
 *   keeps ~100–150 MB of V8's freed compiler scratch memory (compiling PGlite) for good.
 * Options given on the command line win; nothing happens when tuning is off or already done.
 */
export function tunedRestart(
  config: TuningConfig,
  execArgv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  memoryLimit = processMemoryLimit(),
): { flags: string[]; env: Record<string, string> } | null {
  if (!config.KAS_MEMORY_TUNING || env[TUNED_MARK]) return null;
  const given = (flag: string) => execArgv.some((a) => a === flag || a.startsWith(`${flag}=`));
  const flags: string[] = [];
  const semiSpace = semiSpaceMb(config);
  if (semiSpace && !given('--max-semi-space-size')) flags.push(`--max-semi-space-size=${semiSpace}`);
  if (config.KAS_MAX_HEAP_MB && !given('--max-old-space-size'))
    flags.push(`--max-old-space-size=${config.KAS_MAX_HEAP_MB}`);
  if (!optimizesWasm(config, memoryLimit) && !given('--liftoff-only')) flags.push('--liftoff-only');
  const extra: Record<string, string> = { [TUNED_MARK]: '1' };
  if (process.platform === 'linux' && env.MALLOC_MMAP_THRESHOLD_ === undefined)
    extra.MALLOC_MMAP_THRESHOLD_ = String(128 * 1024);
  if (!flags.length && Object.keys(extra).length === 1) return null;
  return { flags, env: extra };
}

/**
 * Replaces this process (same pid, same open files, nothing started yet) with one started with
 * {@link tunedRestart}'s options; returns when there is nothing to do or the platform cannot.
 */
export function restartTuned(config: TuningConfig): void {
  const restart = tunedRestart(config, process.execArgv, process.env);
  if (!restart || typeof process.execve !== 'function') return;
  process.execve(
    process.execPath,
    [process.execPath, ...restart.flags, ...process.execArgv, ...process.argv.slice(1)],
    { ...process.env, ...restart.env },
  );
}

/** This process's V8 heap limit in MB (old and young generations), as V8 reports it. */
export function heapLimitMb(): number {
  return Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
}
