import { type ChatStreamLine, type Context, type Logger, toErrorResponse } from '@kas/server';
import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import type express from 'express';
import type { Request, Response } from 'express';
import { sendError } from './errors.ts';
import { callProcedure } from './rest-adapter.ts';

interface ChatRouteOptions {
  router: AnyTRPCRouter;
  createContext(req: Request, res: Response): Context;
  logger: Logger;
}

function procedureAt(router: AnyTRPCRouter, path: string): AnyTRPCProcedure {
  const procedure = (router._def.procedures as Record<string, AnyTRPCProcedure | undefined>)[path];
  if (!procedure) throw new Error(`No procedure ${path}`);
  return procedure;
}

/**
 * Writes the lines as NDJSON. The first line is awaited before the status, so what fails before it is an
 * ordinary HTTP error; after it, an error is a line of its own.
 */
async function writeLines(options: ChatRouteOptions, res: Response, stream: AsyncIterable<ChatStreamLine>) {
  const lines = stream[Symbol.asyncIterator]();
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
    if (failure.error_code === 'INTERNAL_ERROR') options.logger.error({ err: error }, 'chat stream failed');
    if (!gone)
      res.write(
        `${JSON.stringify({ error: failure.detail, error_code: failure.error_code, is_retryable: failure.is_retryable })}\n`,
      );
  }
  if (gone) void lines.return?.(undefined);
  res.end();
}

/**
 * Writes the turn as NDJSON. Everything that fails before the first line is an ordinary HTTP error; after
 * it, an error is a line of its own. The generation does not depend on this response: when the client goes
 * away the route stops writing and the answer is still completed and saved.
 */
async function sendChatMessage(options: ChatRouteOptions, req: Request, res: Response) {
  const ctx = options.createContext(req, res);
  const input: unknown = req.body ?? {};
  try {
    // Both procedures take the same input (SendMessageInput), so whichever is called validates it alike.
    if (typeof input === 'object' && input !== null && (input as { stream?: unknown }).stream === false) {
      res.json(
        await callProcedure(procedureAt(options.router, 'chat.sendMessage'), {
          path: 'chat.sendMessage',
          ctx,
          input,
        }),
      );
      return;
    }
    const stream = (await callProcedure(procedureAt(options.router, 'chat.sendMessageStream'), {
      path: 'chat.sendMessageStream',
      ctx,
      input,
    })) as AsyncIterable<ChatStreamLine>;
    await writeLines(options, res, stream);
  } catch (error) {
    sendError(res, error, options.logger);
  }
}

/**
 * `GET /chat/chat-session/{session_id}/resume-stream?cursor=N`: the session's latest answer as NDJSON from
 * line N, following the live run (in whichever process it runs) to its end. 404 before the first byte when
 * there is nothing to resume or the session is not the caller's.
 */
async function resumeStream(options: ChatRouteOptions, req: Request, res: Response) {
  const ctx = options.createContext(req, res);
  const cursor = req.query.cursor === undefined ? 0 : Number(req.query.cursor);
  try {
    const stream = (await callProcedure(procedureAt(options.router, 'chat.resumeStream'), {
      path: 'chat.resumeStream',
      ctx,
      input: { session_id: req.params.session_id, cursor },
    })) as AsyncIterable<ChatStreamLine>;
    await writeLines(options, res, stream);
  } catch (error) {
    sendError(res, error, options.logger);
  }
}

/**
 * The hand-written chat route: the NDJSON stream at the path of `chat.sendMessage`. Register it before
 * the REST adapter, which would otherwise answer that path with `chat.sendMessage`'s JSON.
 */
export function registerChatRoutes(
  app: express.Router,
  options: ChatRouteOptions & { prefix: string; readBody: express.RequestHandler },
): void {
  app.post(`${options.prefix}/chat/send-chat-message`, options.readBody, (req, res) =>
    sendChatMessage(options, req, res),
  );
  app.get(`${options.prefix}/chat/chat-session/:session_id/resume-stream`, (req, res) =>
    resumeStream(options, req, res),
  );
}
