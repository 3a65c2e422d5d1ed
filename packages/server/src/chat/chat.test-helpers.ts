import type { z } from 'zod';
import { errorOf } from '../testing/errors.ts';
import type { ChatStreamLine, SendMessageInput } from './chat.schemas.ts';

export { errorOf };

type Input = z.input<typeof SendMessageInput>;
type Caller = {
  chat: { sendMessageStream(input: Input): Promise<AsyncIterable<ChatStreamLine>> };
};

/** All lines of one streamed turn through the tRPC procedure. */
export async function streamAll(caller: Caller, input: Input): Promise<ChatStreamLine[]> {
  const lines: ChatStreamLine[] = [];
  for await (const line of await caller.chat.sendMessageStream(input)) lines.push(line);
  return lines;
}

export function objs(lines: ChatStreamLine[]) {
  return lines.flatMap((l) => ('obj' in l ? [l.obj] : []));
}

export function answerOf(lines: ChatStreamLine[]): string {
  return objs(lines)
    .map((o) => (o.type === 'message_delta' ? o.content : ''))
    .join('');
}
