import { pino } from 'pino';
import type { Config } from './config.ts';

export type Logger = pino.Logger;

export function createLogger(config: Pick<Config, 'KAS_LOG_LEVEL'>): Logger {
  return pino({ level: config.KAS_LOG_LEVEL, base: { service: 'kas' } });
}
