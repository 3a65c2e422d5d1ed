import {
  type AppDeps,
  AppError,
  type ChatStreamLine,
  createCaller,
  createInnerContext,
  toErrorResponse,
} from '@kas/server';
import type express from 'express';
import type { Request, Response } from 'express';
import { sendError } from './errors.ts';

function contextFor(deps: AppDeps, req: Request, res: Response) {
  return createInnerContext(deps, {
    authorization: req.headers.authorization,
    clientAddress: req.socket.remoteAddress,
    setHeader: (name, value) => {
      if (!res.headersSent) res.setHeader(name, value);
    },
  });
}

/**
 * Writes the turn as NDJSON. Everything that fails before the first line is an ordinary HTTP error; after
 * it, an error is a line of its own. The generation does not depend on this response: when the client goes
 * away the route stops writing and the answer is still completed and saved.
 */
async function sendChatMessage(deps: AppDeps, req: Request, res: Response) {
  const caller = createCaller(contextFor(deps, req, res));
  const body: unknown = req.body ?? {};
  try {
    if (typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === false) {
      res.json(await caller.chat.sendMessage(body as never));
      return;
    }
    const lines = (await caller.chat.sendMessageStream(body as never))[Symbol.asyncIterator]();
    let next = await lines.next();
    let gone = false;
    res.on('close', () => {
      gone = true;
    });
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.socket?.setNoDelay(true);
    try {
      while (!next.done && !gone) {
        res.write(`${JSON.stringify(next.value satisfies ChatStreamLine)}\n`);
        next = await lines.next();
      }
    } catch (error) {
      const failure = toErrorResponse(error);
      if (failure.error_code === 'INTERNAL_ERROR') deps.logger.error({ err: error }, 'chat stream failed');
      if (!gone)
        res.write(
          `${JSON.stringify({ error: failure.detail, error_code: failure.error_code, is_retryable: failure.is_retryable })}\n`,
        );
    }
    if (gone) void lines.return?.(undefined);
    res.end();
  } catch (error) {
    sendError(res, error, deps.logger);
  }
}

const SEND_MESSAGE_PATH = '/chat/send-chat-message';

/**
 * The routes `registerChatRoutes` adds, as `METHOD /path`: they answer before the REST adapter, so its
 * front handler (rest-adapter.ts) leaves these paths to them.
 */
export const CHAT_ROUTES: ReadonlySet<string> = new Set([`POST ${SEND_MESSAGE_PATH}`]);

/** The hand-written chat route: the NDJSON stream. */
export function registerChatRoutes(api: express.Router, deps: AppDeps): void {
  api.post(SEND_MESSAGE_PATH, (req, res) => sendChatMessage(deps, req, res));
}
