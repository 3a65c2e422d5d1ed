import { type FakeLlmServer, type ScriptedReply, startFake } from './openai.ts';

export type { FakeLlmServer, ScriptedReply };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A local server speaking the Anthropic Messages streaming protocol (text, tool use, errors, slow streams). */
export function startFakeAnthropic(): Promise<FakeLlmServer> {
  return startFake(
    async (reply, body, res, fake) => {
      if (reply.status) {
        res.writeHead(reply.status, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            type: 'error',
            error: { type: 'api_error', message: `scripted failure ${reply.status}` },
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.socket?.setNoDelay(true);
      const event = (type: string, data: Record<string, unknown>) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      event('message_start', {
        message: {
          id: 'msg_fake',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 0 },
        },
      });
      let index = 0;
      if (reply.tokens?.length) {
        event('content_block_start', { index, content_block: { type: 'text', text: '' } });
        let n = 0;
        for (const token of reply.tokens) {
          if (reply.failAfter !== undefined && n >= reply.failAfter) {
            event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
            res.end();
            return;
          }
          if (reply.delayMs) await sleep(reply.delayMs);
          if (res.destroyed) return;
          if (n === 0) fake.firstTokenAt.push(performance.now());
          event('content_block_delta', { index, delta: { type: 'text_delta', text: token } });
          n++;
        }
        event('content_block_stop', { index });
        index++;
      }
      for (const call of reply.toolCalls ?? []) {
        event('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
        });
        event('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: call.arguments },
        });
        event('content_block_stop', { index });
        index++;
      }
      event('message_delta', {
        delta: { stop_reason: reply.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: 5 },
      });
      event('message_stop', {});
      res.end();
    },
    ['/v1/messages'],
    '',
  );
}
