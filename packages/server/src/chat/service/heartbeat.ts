import type { ChatStreamLine } from '../chat.schemas.ts';

const HEARTBEAT: ChatStreamLine = {
  placement: { turn_index: 0, tab_index: 0, sub_turn_index: null },
  obj: { type: 'chat_heartbeat' },
};

/** The lines, plus a `chat_heartbeat` line whenever none came for `quietMs` (keeps proxies from timing out). */
export async function* withHeartbeat(
  lines: AsyncIterable<ChatStreamLine>,
  quietMs: number,
): AsyncGenerator<ChatStreamLine> {
  const iterator = lines[Symbol.asyncIterator]();
  let pending = iterator.next();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    while (true) {
      const quiet = new Promise<'quiet'>((resolve) => {
        timer = setTimeout(() => resolve('quiet'), quietMs);
      });
      const next = await Promise.race([pending, quiet]);
      clearTimeout(timer);
      if (next === 'quiet') {
        yield HEARTBEAT;
        continue;
      }
      if (next.done) return;
      yield next.value;
      pending = iterator.next();
    }
  } finally {
    clearTimeout(timer);
  }
}
