#!/usr/bin/env node
/**
 * The `kas` command. Long-running commands (serve, worker, reindex) first replace this process (same
 * pid, same open files) with one started with kas's memory settings — before the server's modules
 * load, so the restart costs a bare Node start — then the commands run (cli-commands.ts).
 */
import { KAS_VERSION, loadConfig, restartTuned } from '@kas/server/startup';

if (['--version', '-v', 'version'].includes(process.argv[2] ?? '')) {
  process.stdout.write(`${KAS_VERSION}\n`);
  process.exit(0);
}

const LONG_RUNNING = new Set(['serve', 'worker', 'reindex']);
if (LONG_RUNNING.has(process.argv[2] ?? '')) {
  let config: ReturnType<typeof loadConfig> | undefined;
  try {
    config = loadConfig();
  } catch {
    // An invalid setting is reported by the command itself.
  }
  if (config) restartTuned(config);
}
await import('./cli-commands.ts');
