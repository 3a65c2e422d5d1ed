import { pino } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';

export type Logger = pino.Logger;

type LogConfig = Pick<Config, 'KAS_LOG_LEVEL'> & Partial<Pick<Config, 'KAS_LOG_FORMAT' | 'NODE_ENV'>>;

/** Readable lines for a person at a terminal; JSON in production, in pipes and when asked. */
export function usePrettyLogs(config: LogConfig, isTerminal: boolean): boolean {
  const format = config.KAS_LOG_FORMAT ?? 'auto';
  if (format !== 'auto') return format === 'pretty';
  return isTerminal && config.NODE_ENV !== 'production';
}

export function createLogger(config: LogConfig, destination: NodeJS.WritableStream = process.stdout): Logger {
  const options = { level: config.KAS_LOG_LEVEL, base: { service: 'kas' } };
  const isTerminal = Boolean((destination as { isTTY?: boolean }).isTTY);
  if (!usePrettyLogs(config, isTerminal)) return pino(options, destination);
  // A synchronous stream rather than pino's worker-thread transport: nothing to start or flush at exit.
  return pino(
    options,
    pretty({
      destination,
      sync: true,
      colorize: isTerminal,
      ignore: 'pid,hostname,service',
      translateTime: 'SYS:HH:MM:ss.l',
    }),
  );
}
