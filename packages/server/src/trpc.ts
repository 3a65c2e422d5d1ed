import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { ZodType } from 'zod';
import { authenticate, cachedCaller } from './auth/authenticate.ts';
import { type Actor, type Role, roleAtLeast } from './auth/roles.ts';
import type { AppDeps, Context } from './context.ts';
import { AppError, toErrorResponse } from './errors.ts';

/** Procedure meta: the OpenAPI route, plus `noContent` for endpoints that answer 204 with no body. */
export type KasMeta = OpenApiMeta<{
  noContent?: boolean;
  /** The schema of one line of an NDJSON (`text/event-stream`) answer the route can give instead. */
  streamLine?: ZodType;
  /** A file download: the REST adapter sends the procedure's bytes as this type instead of JSON. */
  download?: { contentType: string; fileName: string };
  /** A multipart upload: the REST adapter reads the form's `field` files into the input's `files`. */
  multipart?: { field: string; maxFiles: number };
  /** A signed webhook: the REST adapter hands the procedure `headers` and the body exactly as sent (`raw_body`). */
  rawBody?: boolean;
  /**
   * The least role the procedure requires, enforced by `authed`. Set only by the base procedures below:
   * tRPC merges a procedure's own `.meta()` over its base's, so setting it there would override the gate.
   */
  minRole?: Role;
  /** Authenticates when a credential is sent and runs without one (publicly shared reads). */
  optionalAuth?: boolean;
}>;

const t = initTRPC
  .context<Context>()
  .meta<KasMeta>()
  .create({
    isDev: false,
    transformer: superjson,
    errorFormatter({ shape, error }) {
      const body = toErrorResponse(error);
      return {
        message: body.detail,
        code: shape.code,
        data: {
          httpStatus: body.status,
          error_code: body.error_code,
          detail: body.detail,
          is_retryable: body.is_retryable,
        },
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const middleware = t.middleware;

// Failures are logged where they leave the process (the REST adapter and the /api/trpc onError), so
// procedures carry no logging middleware of their own.
export const publicProcedure = t.procedure;

/**
 * The caller behind the request's credential. Each failed attempt counts against the client's address,
 * and an address that failed too often has its refusals answered 429 until the window ends, so keys and
 * tokens cannot be guessed at speed. A valid credential is never refused by that limit: behind a shared
 * address (a proxy, a NAT) one client's bad keys do not lock the others out.
 */
async function authenticateCaller(ctx: Context): Promise<Actor> {
  if (ctx.actor) return ctx.actor;
  const { deps, req } = ctx;
  try {
    const actor = await authenticate({ ctx: deps, authorization: req.authorization, resource: req.resource });
    req.onActor?.(actor);
    return actor;
  } catch (error) {
    if (error instanceof AppError && error.error_code === 'UNAUTHENTICATED') {
      await deps.authFailures.assertAllowed(req.clientAddress);
      if (req.authorization) await deps.authFailures.record(req.clientAddress);
    }
    throw error;
  }
}

async function countRequest(ctx: Context, actor: Actor): Promise<Actor> {
  const headers = await ctx.deps.rateLimiter.consume(actor.rate_limit_key);
  for (const [name, value] of Object.entries(headers)) ctx.req.setHeader(name, value);
  return actor;
}

/**
 * The caller: the one already found for this request, else one the auth cache holds (without waiting:
 * most requests come with a credential seen moments ago), else `authenticateCaller`'s.
 */
function callerOf(ctx: Context): Actor | Promise<Actor> {
  if (ctx.actor) return ctx.actor;
  const cached = cachedCaller(ctx.deps, ctx.req.authorization);
  if (!cached) return authenticateCaller(ctx);
  ctx.req.onActor?.(cached);
  return cached;
}

function withRole(actor: Actor, minimum: Role | undefined): Actor {
  const required = minimum ?? 'admin';
  if (!roleAtLeast(actor.role, required)) {
    throw new AppError(
      'INSUFFICIENT_PERMISSIONS',
      actor.role === 'limited'
        ? 'Access denied: a limited user may only chat and read agents'
        : `This action requires the ${required} role; the caller has the ${actor.role} role`,
    );
  }
  return actor;
}

/**
 * `authorize`, then the request counted against the caller's rate limit (when there is one), as every
 * procedure is: `authed` runs it, and so do the surfaces that do not go through a procedure (MCP, /v1),
 * so they have the same gate and the same limits. Answers at once when the caller is cached and no limit
 * is kept: the gate runs on every request, and each wait costs more than the checks.
 */
export function admit(ctx: Context, minimum: Role | undefined): Actor | Promise<Actor> {
  const found = callerOf(ctx);
  return found instanceof Promise
    ? found.then((actor) => counted(ctx, withRole(actor, minimum)))
    : counted(ctx, withRole(found, minimum));
}

/** The request counted against the caller's rate limit, when one is kept. */
function counted(ctx: Context, actor: Actor): Actor | Promise<Actor> {
  return ctx.deps.rateLimiter.limit > 0 ? countRequest(ctx, actor) : actor;
}

/**
 * The one role gate: authenticates, checks the role the procedure's meta requires (a procedure built
 * without one is admin-only: fail closed), counts the request against the caller's rate limit, and
 * narrows the context to the caller (trpc examples/next-sse-chat `isAuthed`).
 */
const authed = t.middleware(async ({ ctx, meta, next }) => {
  const admitted = admit(ctx, meta?.minRole);
  const actor = admitted instanceof Promise ? await admitted : admitted;
  return next({ ctx: { actor } });
});

/**
 * Authenticates the request's caller and checks the role `minimum` (unset: admin), as `authed` does
 * (which also counts the request). The REST bridge calls it before reading a multipart body, so a caller
 * without a valid credential or the role never has a byte of it read; the actor found is kept on the
 * context, and the procedure's own `authed` reuses it.
 */
export async function authorize(ctx: Context, minimum: Role | undefined): Promise<Actor> {
  return withRole(await callerOf(ctx), minimum);
}

/** Authenticates when a credential is sent and runs without one: only for publicly shared reads. */
export const optionalAuthProcedure = publicProcedure
  .meta({ optionalAuth: true })
  .use(async ({ ctx, next }) => {
    if (!ctx.req.authorization) return next({ ctx: { actor: null } });
    const actor = await authenticateCaller(ctx);
    await countRequest(ctx, actor);
    return next({ ctx: { actor } });
  });

/**
 * A webhook: authenticated by its signature, which the procedure checks, not by a credential. Each
 * delivery the procedure refuses counts against its address, whether as unauthenticated (401) or as the
 * answer for an absent object (404) that hides which check failed, and past the limit an address's
 * refusals are answered 429, so secrets and ids cannot be probed at speed. Counted apart from failed
 * authentications (`deps.webhookFailures`): forged deliveries from GitHub's or Slack's shared addresses
 * never lock out API keys, and a correctly signed delivery is never refused by the count.
 */
export const webhookProcedure = publicProcedure.use(async ({ ctx, next }) => {
  const { deps, req } = ctx;
  const result = await next();
  if (!result.ok) {
    const { status } = toErrorResponse(result.error);
    if (status === 401 || status === 404) {
      await deps.webhookFailures.assertAllowed(req.clientAddress);
      await deps.webhookFailures.record(req.clientAddress);
    }
  }
  return result;
});

/** Any caller, `limited` included: only chat and reading agents use it. */
export const limitedProcedure = publicProcedure.meta({ minRole: 'limited' }).use(authed);
/** Any caller except `limited` ones. */
export const basicProcedure = publicProcedure.meta({ minRole: 'basic' }).use(authed);
/** Curator or admin. */
export const curatorProcedure = publicProcedure.meta({ minRole: 'curator' }).use(authed);
/** Admin only. */
export const adminProcedure = publicProcedure.meta({ minRole: 'admin' }).use(authed);

/** The context of an authenticated procedure: the actor is always set. */
export type AuthedContext = Context & { actor: NonNullable<Context['actor']> };

/**
 * What a router hands a service as `ctx`: the application's dependencies and the caller (non-null in
 * authenticated procedures), without the request, which only the middlewares above read. Services
 * name the parts they use (`ServiceContext<K>`, `ActorContext<K>` in context.ts).
 */
export function serviceContext<A extends Actor | null>(ctx: {
  deps: AppDeps;
  actor: A;
}): AppDeps & { actor: A } {
  return { ...ctx.deps, actor: ctx.actor };
}

/** The least credential an operation needs: `none` for public and optionally authenticated ones. */
export type MinRole = Role | 'none';

function metaOf(procedure: { _def: object }): KasMeta | undefined {
  return (procedure._def as { meta?: KasMeta }).meta;
}

/** The least role a procedure requires, as its base procedure declared it in the meta. */
export function procedureMinRole(procedure: { _def: object }): MinRole {
  return metaOf(procedure)?.minRole ?? 'none';
}

/** Whether a procedure reads the caller's key at all (required, or optional as for shared reads). */
export function procedureReadsKey(procedure: { _def: object }): boolean {
  const meta = metaOf(procedure);
  return meta?.minRole !== undefined || meta?.optionalAuth === true;
}
