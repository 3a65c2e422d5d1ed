/**
 * `@kas/server/startup`: what the `kas` command reads before the server's modules load (its settings,
 * and the restart with kas's memory settings), so that restart costs a bare Node start. Loading
 * `@kas/server` first took 1.5-3 s more (measured on the 2-core test machine).
 */
export { type Config, configFrom, loadConfig, unknownSettings } from './config.ts';
export { restartTuned, tunedRestart } from './memory.ts';
export { KAS_VERSION } from './version.ts';
