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
  if (!usePrettyLogs(config, isTerminal)) {
    // JSON to standard output goes through pino's asynchronous destination: a line is written at once
    // when no write is in flight, and lines that arrive meanwhile go out together in the next write, so
    // the request log costs no system call per request under load. pino flushes it on exit.
    if (destination === process.stdout)
      return pino(options, pino.destination({ dest: process.stdout.fd, sync: false }));
    return pino(options, destination);
  }
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

/** Where a logger's lines go, and the parts of its `info` line that do not change from line to line. */
export interface LineSink {
  stream: { write(chunk: string): unknown };
  /** `{"level":30,"time":` */
  head: string;
  /** The logger's bindings as pino writes them after the time (`,"service":"kas"`). */
  bindings: string;
}

/**
 * The logger's own stream and line prefix, for a caller that writes many `info` lines of pino's exact
 * shape itself (the request log); null for a logger that does not expose them.
 */
export function lineSink(logger: Logger): LineSink | null {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as LineSink['stream'] | undefined;
  const bindings = internals[pino.symbols.chindingsSym];
  if (typeof stream?.write !== 'function' || typeof bindings !== 'string') return null;
  return { stream, head: `{"level":${logger.levels.values.info},"time":`, bindings };
}

/**
 * An error's message followed by its causes' ("fetch failed: connect ECONNREFUSED 127.0.0.1:9"), the
 * real reason a library's generic message ("Connection error.") hides.
 */
export function causeChain(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const message =
      current instanceof Error
        ? current.message || current.name
        : typeof current === 'string'
          ? current
          : JSON.stringify(current);
    if (message && !parts.includes(message)) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}

/** A URL without its query and credentials, safe to log (tokens travel in either). */
export function loggableUrl(url: string | URL): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
