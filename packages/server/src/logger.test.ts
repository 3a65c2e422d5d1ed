import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { createLogger } from './logger.ts';

function capture(isTTY: boolean): { stream: Writable & { isTTY: boolean }; text(): string } {
  const chunks: string[] = [];
  const stream = Object.assign(
    new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    }),
    { isTTY },
  );
  return { stream, text: () => chunks.join('') };
}

describe('logs', () => {
  it('are readable lines on a terminal and JSON in a pipe or in production', () => {
    const terminal = capture(true);
    createLogger(loadConfig({}), terminal.stream).info({ documents: 3 }, 'indexed');
    expect(terminal.text()).toMatch(/INFO.*indexed/);
    expect(() => JSON.parse(terminal.text())).toThrow();

    const pipe = capture(false);
    createLogger(loadConfig({}), pipe.stream).info({ documents: 3 }, 'indexed');
    expect(JSON.parse(pipe.text())).toMatchObject({ msg: 'indexed', documents: 3, service: 'kas' });

    const production = capture(true);
    createLogger(loadConfig({ NODE_ENV: 'production' }), production.stream).info('started');
    expect(JSON.parse(production.text())).toMatchObject({ msg: 'started' });

    const forced = capture(false);
    createLogger(loadConfig({ KAS_LOG_FORMAT: 'pretty' }), forced.stream).warn('slow');
    expect(forced.text()).toMatch(/WARN.*slow/);
  });
});
