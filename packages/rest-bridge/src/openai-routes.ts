import {
  type AppDeps,
  AppError,
  admit,
  ChatCompletionInput,
  type Context,
  openaiService,
  toErrorResponse,
} from '@kas/server';
import express, { type Request, type Response } from 'express';

interface OpenAiRouteOptions {
  deps: AppDeps;
  createContext(req: Request, res: Response): Context;
}

/** OpenAI's error `type` for a status, as its clients read it. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** The error object of OpenAI's shape: kas's detail, a type from the status, kas's code (`model_not_found` for an unknown model). */
function errorBody(error: unknown, options: OpenAiRouteOptions, req: Request) {
  const failure = toErrorResponse(error);
  if (failure.error_code === 'INTERNAL_ERROR')
    options.deps.logger.error({ err: error, url: req.originalUrl }, 'OpenAI-compatible request failed');
  const code =
    failure.error_code === 'PERSONA_NOT_FOUND'
      ? 'model_not_found'
      : failure.status === 401
        ? 'invalid_api_key'
        : failure.error_code.toLowerCase();
  return {
    failure,
    body: { error: { message: failure.detail, type: errorType(failure.status), param: null, code } },
  };
}

/** Answers a failure before the first byte: OpenAI's `{"error": {…}}` with kas's status and headers. */
function sendOpenAiError(options: OpenAiRouteOptions, req: Request, res: Response, error: unknown) {
  const { failure, body } = errorBody(error, options, req);
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [name, value] of Object.entries(failure.headers)) res.setHeader(name, value);
  res.status(failure.status).json(body);
}

async function actorContext(options: OpenAiRouteOptions, req: Request, res: Response) {
  const actor = await admit(options.createContext(req, res), 'limited');
  return { ...options.deps, actor };
}

async function models(options: OpenAiRouteOptions, req: Request, res: Response) {
  try {
    const ctx = await actorContext(options, req, res);
    res.json(await openaiService.listModels({ ctx }));
  } catch (error) {
    sendOpenAiError(options, req, res, error);
  }
}

async function model(options: OpenAiRouteOptions, req: Request, res: Response) {
  try {
    const ctx = await actorContext(options, req, res);
    res.json(await openaiService.getModel({ ctx, id: String(req.params.model) }));
  } catch (error) {
    sendOpenAiError(options, req, res, error);
  }
}

/**
 * `POST /v1/chat/completions`. Everything that fails before the first byte is an ordinary error; after it,
 * a streamed failure is an SSE event carrying an `error` object, then `[DONE]`. The answer does not depend
 * on this response: when the client goes away, it is still completed and saved.
 */
async function chatCompletions(options: OpenAiRouteOptions, req: Request, res: Response) {
  let completion: openaiService.Completion;
  let stream: boolean;
  try {
    const ctx = await actorContext(options, req, res);
    const input = ChatCompletionInput.parse(req.body ?? {});
    stream = input.stream === true;
    completion = await openaiService.startCompletion({ ctx, input });
  } catch (error) {
    sendOpenAiError(options, req, res, error);
    return;
  }
  if (!stream) {
    try {
      res.json(await openaiService.completeChat({ completion }));
    } catch (error) {
      sendOpenAiError(options, req, res, error);
    }
    return;
  }
  await writeSse(options, req, res, completion, -1);
}

/**
 * The completion as SSE: each chunk an event with its sequence number as `id` (heartbeats are comments
 * and take none, so a replay numbers the chunks alike), those up to `startingAfter` skipped.
 */
async function writeSse(
  options: OpenAiRouteOptions,
  req: Request,
  res: Response,
  completion: openaiService.Completion,
  startingAfter: number,
) {
  let gone = false;
  res.on('close', () => {
    gone = true;
  });
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  res.socket?.setNoDelay(true);
  res.flushHeaders();
  const chunks = openaiService.streamChat({ completion });
  let sequence = 0;
  try {
    for await (const chunk of chunks) {
      if (gone) break;
      if (!chunk) res.write(': keep-alive\n\n');
      else if (sequence++ > startingAfter)
        res.write(`id: ${sequence - 1}\ndata: ${JSON.stringify(chunk)}\n\n`);
    }
  } catch (error) {
    if (!gone) res.write(`id: ${sequence}\ndata: ${JSON.stringify(errorBody(error, options, req).body)}\n\n`);
  }
  if (!gone) res.write('data: [DONE]\n\n');
  res.end();
}

/**
 * `GET /v1/chat/completions/{id}`: with `stream=true`, the completion's events after `starting_after`, then
 * its live run to the end (the resume convention of OpenAI's Responses API), from any kas process; without
 * it, the whole completion once it has ended.
 */
async function retrieveCompletion(options: OpenAiRouteOptions, req: Request, res: Response) {
  let completion: openaiService.Completion;
  const after = req.query.starting_after === undefined ? -1 : Number(req.query.starting_after);
  try {
    const ctx = await actorContext(options, req, res);
    if (!Number.isInteger(after) || after < -1)
      throw new AppError('INVALID_INPUT', 'starting_after: a sequence number (an integer, 0 or more)');
    completion = await openaiService.resumeCompletion({
      ctx,
      completionId: String(req.params.completion_id),
      includeUsage: req.query.include_usage === 'true',
    });
  } catch (error) {
    sendOpenAiError(options, req, res, error);
    return;
  }
  if (req.query.stream !== 'true') {
    try {
      res.json(await openaiService.completeChat({ completion }));
    } catch (error) {
      sendOpenAiError(options, req, res, error);
    }
    return;
  }
  await writeSse(options, req, res, completion, after);
}

/** `/v1`: the OpenAI-compatible surface (`{base_url}/v1` is the base URL a client configures). */
export function createOpenAiRouter(options: OpenAiRouteOptions): express.Router {
  const router = express.Router();
  router.use(express.json({ limit: `${options.deps.config.KAS_MAX_BODY_MB}mb` }));
  router.get('/models', (req, res) => models(options, req, res));
  router.get('/models/:model', (req, res) => model(options, req, res));
  router.post('/chat/completions', (req, res) => chatCompletions(options, req, res));
  router.get('/chat/completions/:completion_id', (req, res) => retrieveCompletion(options, req, res));
  router.use((req, res) => {
    sendOpenAiError(
      options,
      req,
      res,
      new AppError('NOT_FOUND', `No route for ${req.method} ${req.baseUrl}${req.path}`),
    );
  });
  router.use((error: unknown, req: Request, res: Response, _next: express.NextFunction) => {
    sendOpenAiError(options, req, res, error);
  });
  return router;
}
