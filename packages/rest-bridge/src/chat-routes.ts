import {
  type AppDeps,
  AppError,
  apiKeysService,
  type ChatStreamLine,
  createCaller,
  createInnerContext,
  filesService,
  toErrorResponse,
} from '@kas/server';
import type express from 'express';
import type { Request, Response } from 'express';
import multer from 'multer';
import { sendError } from './errors.ts';

const MAX_FILE_BYTES = 20 * 1024 * 1024;
const MAX_FILES = 10;

function contextFor(deps: AppDeps, req: Request, res: Response) {
  return createInnerContext(deps, {
    authorization: req.headers.authorization,
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

const upload = multer({
  storage: multer.memoryStorage(),
  limits: { fileSize: MAX_FILE_BYTES, files: MAX_FILES },
});

/** Multipart upload of files to attach to a message: `files` fields; answers `{files: [FileDescriptor]}`. */
function uploadRoute(deps: AppDeps): express.RequestHandler[] {
  const authenticate: express.RequestHandler = async (req, res, next) => {
    try {
      const ctx = contextFor(deps, req, res);
      const actor = await apiKeysService.authenticate({ ctx, authorization: ctx.authorization });
      const headers = await deps.rateLimiter.consume(`key:${actor.api_key_id}`);
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      res.locals.actor = actor;
      next();
    } catch (error) {
      sendError(res, error, deps.logger);
    }
  };
  const parse: express.RequestHandler = (req, res, next) => {
    upload.array('files', MAX_FILES)(req, res, (error?: unknown) => {
      if (!error) return next();
      const code = (error as { code?: string }).code;
      if (code === 'LIMIT_FILE_SIZE' || code === 'LIMIT_FILE_COUNT')
        return sendError(
          res,
          new AppError(
            'PAYLOAD_TOO_LARGE',
            `At most ${MAX_FILES} files of ${MAX_FILE_BYTES / 1024 / 1024} MB each`,
          ),
          deps.logger,
        );
      sendError(
        res,
        new AppError('VALIDATION_ERROR', 'Malformed multipart upload (use the field "files")'),
        deps.logger,
      );
    });
  };
  const handle: express.RequestHandler = async (req, res) => {
    try {
      const files = ((req.files as Express.Multer.File[] | undefined) ?? []).map((f) => ({
        name: Buffer.from(f.originalname, 'latin1').toString('utf8'),
        contentType: f.mimetype || 'application/octet-stream',
        data: f.buffer,
      }));
      res.json(await filesService.uploadFiles({ ctx: deps, actor: res.locals.actor, files }));
    } catch (error) {
      sendError(res, error, deps.logger);
    }
  };
  return [authenticate, parse, handle];
}

/** The hand-written chat routes: the NDJSON stream and the file upload. */
export function registerChatRoutes(api: express.Router, deps: AppDeps): void {
  api.post('/chat/send-chat-message', (req, res) => sendChatMessage(deps, req, res));
  api.post('/chat/file', ...uploadRoute(deps));
}
