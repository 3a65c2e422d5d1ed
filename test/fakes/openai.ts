import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer of the fake model. */
export interface ScriptedReply {
  /** Content deltas, streamed in order. */
  tokens?: string[];
  reasoning?: string[];
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  /** Pause before each chunk (a slow model). */
  delayMs?: number;
  /** Answer with this HTTP status and an error body instead of a stream. */
  status?: number;
  /** After this many content tokens, send an error event and end the stream. */
  failAfter?: number;
}

export interface FakeLlmServer {
  url: string;
  /** What clients put in `baseURL`. */
  baseURL: string;
  /** Every request body received, in order. */
  requests: Array<Record<string, any>>;
  /** Replies for the next requests; when none is queued, `fallback` answers. */
  enqueue(...replies: ScriptedReply[]): void;
  fallback: (body: Record<string, any>) => ScriptedReply;
  /** When each request arrived and when each stream's first content token was written (performance.now()). */
  requestAt: number[];
  firstTokenAt: number[];
  /** When each streamed answer's last chunk was written (performance.now()). */
  endAt: number[];
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readJson(req: IncomingMessage): Promise<Record<string, any>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

/** Shared by both fakes: a queue of scripted replies and the request log. */
export async function startFake(
  handle: (
    reply: ScriptedReply,
    body: Record<string, any>,
    res: ServerResponse,
    fake: FakeLlmServer,
  ) => Promise<void>,
  paths: string[],
  basePath: string,
): Promise<FakeLlmServer> {
  const queue: ScriptedReply[] = [];
  const fake = {
    requests: [] as Array<Record<string, any>>,
    enqueue: (...replies: ScriptedReply[]) => void queue.push(...replies),
    fallback: (() => ({
      tokens: ['Hello', ' from', ' the', ' fake', ' model.'],
    })) as FakeLlmServer['fallback'],
    requestAt: [] as number[],
    firstTokenAt: [] as number[],
    endAt: [] as number[],
  } as FakeLlmServer;
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'POST' || !paths.some((p) => req.url?.split('?')[0] === p)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    fake.requestAt.push(performance.now());
    const body = await readJson(req);
    fake.requests.push(body);
    const reply = queue.shift() ?? fake.fallback(body);
    try {
      await handle(reply, body, res, fake);
    } catch {
      res.destroy();
    }
  });
  // Like the real API, connections are kept alive (undici drops a connection whose keep-alive hint is
  // under 2 s, so a short one would make every model call open a new connection).
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  fake.url = `http://127.0.0.1:${port}`;
  fake.baseURL = `${fake.url}${basePath}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}

/** A local server speaking OpenAI chat completions (streaming, tool calls, errors, slow streams). */
export function startFakeOpenAi(): Promise<FakeLlmServer> {
  return startFake(
    async (reply, body, res, fake) => {
      if (reply.status) {
        res
          .writeHead(reply.status, { 'content-type': 'application/json' })
          .end(
            JSON.stringify({ error: { message: `scripted failure ${reply.status}`, type: 'server_error' } }),
          );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.socket?.setNoDelay(true);
      const model = body.model ?? 'fake';
      const send = (delta: Record<string, unknown>, finish: string | null = null) =>
        res.write(
          `data: ${JSON.stringify({
            id: 'chatcmpl-fake',
            object: 'chat.completion.chunk',
            created: 0,
            model,
            choices: [{ index: 0, delta, finish_reason: finish }],
          })}\n\n`,
        );
      send({ role: 'assistant', content: '' });
      for (const piece of reply.reasoning ?? []) {
        if (reply.delayMs) await sleep(reply.delayMs);
        send({ reasoning_content: piece });
      }
      let n = 0;
      for (const token of reply.tokens ?? []) {
        if (reply.failAfter !== undefined && n >= reply.failAfter) {
          res.write(
            `data: ${JSON.stringify({ error: { message: 'scripted mid-stream failure', type: 'server_error' } })}\n\n`,
          );
          res.end();
          return;
        }
        if (reply.delayMs) await sleep(reply.delayMs);
        if (res.destroyed) return;
        if (n === 0) fake.firstTokenAt.push(performance.now());
        send({ content: token });
        n++;
      }
      for (const [index, call] of (reply.toolCalls ?? []).entries()) {
        send({
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        });
        const half = Math.ceil(call.arguments.length / 2);
        for (const part of [call.arguments.slice(0, half), call.arguments.slice(half)])
          send({ tool_calls: [{ index, function: { arguments: part } }] });
      }
      send({}, reply.toolCalls?.length ? 'tool_calls' : 'stop');
      fake.endAt.push(performance.now());
      res.end('data: [DONE]\n\n');
    },
    ['/v1/chat/completions', '/chat/completions'],
    '/v1',
  );
}

/** The settings that point kas at this fake as its OpenAI-compatible model. */
export function fakeOpenAiEnv(fake: Pick<FakeLlmServer, 'baseURL'>): Record<string, string> {
  return {
    KAS_LLM_PROVIDER: 'openai',
    KAS_LLM_BASE_URL: fake.baseURL,
    KAS_LLM_API_KEY: 'test-key',
    KAS_LLM_MODEL: 'fake-model',
  };
}
