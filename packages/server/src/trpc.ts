import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { ZodType } from 'zod';
import * as apiKeysService from './api-keys/api-keys.service.ts';
import { type Actor, type Role, roleAtLeast } from './auth/roles.ts';
import type { Context } from './context.ts';
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
 * The caller behind the request's credential. An address that failed too often is refused first, and
 * each failed attempt counts against it, so keys and tokens cannot be guessed at speed.
 */
async function authenticateCaller(ctx: Context): Promise<Actor> {
  if (ctx.actor) return ctx.actor;
  try {
    return await apiKeysService.authenticate({
      ctx,
      authorization: ctx.authorization,
      admit: (cached) => ctx.authFailures.assertAllowed(ctx.clientAddress, { cached }),
    });
  } catch (error) {
    if (error instanceof AppError && error.error_code === 'UNAUTHENTICATED' && ctx.authorization)
      await ctx.authFailures.record(ctx.clientAddress);
    throw error;
  }
}

function requireRole(minimum: Role) {
  return t.middleware(async ({ ctx, next }) => {
    const actor = await authenticateCaller(ctx);
    if (!roleAtLeast(actor.role, minimum)) {
      throw new AppError(
        'INSUFFICIENT_PERMISSIONS',
        actor.role === 'limited'
          ? 'Access denied: a limited user may only chat and read agents'
          : `This action requires the ${minimum} role; the caller has the ${actor.role} role`,
      );
    }
    const headers = await ctx.rateLimiter.consume(actor.rate_limit_key);
    for (const [name, value] of Object.entries(headers)) ctx.setHeader(name, value);
    // Set on this request's own context object: `next({ ctx })` would copy the whole context (every
    // dependency) into a new object, a tenth of a simple GET's time. The cast keeps tRPC's narrowing.
    ctx.actor = actor;
    return next() as unknown as ReturnType<typeof next<{ actor: Actor }>>;
  });
}

/** Authenticates when a key is sent and runs without one: only for publicly shared reads. */
export const optionalAuthProcedure = publicProcedure.use(async ({ ctx, next }) => {
  if (!ctx.authorization) return next({ ctx: { actor: null } });
  const actor = await authenticateCaller(ctx);
  const headers = await ctx.rateLimiter.consume(actor.rate_limit_key);
  for (const [name, value] of Object.entries(headers)) ctx.setHeader(name, value);
  ctx.actor = actor;
  return next() as unknown as ReturnType<typeof next<{ actor: Actor }>>;
});

/** Any caller, `limited` included: only chat and reading agents use it. */
export const limitedProcedure = publicProcedure.use(requireRole('limited'));
/** Any caller except `limited` ones. */
export const basicProcedure = publicProcedure.use(requireRole('basic'));
/** Curator or admin. */
export const curatorProcedure = publicProcedure.use(requireRole('curator'));
/** Admin only. */
export const adminProcedure = publicProcedure.use(requireRole('admin'));

/** The context of an authenticated procedure: the actor is always set. */
export type AuthedContext = Context & { actor: NonNullable<Context['actor']> };

/** The least credential an operation needs: `none` for public and optionally authenticated ones. */
export type MinRole = Role | 'none';

const ROLE_GATES: [MinRole, unknown][] = [
  ['admin', adminProcedure._def.middlewares.at(-1)],
  ['curator', curatorProcedure._def.middlewares.at(-1)],
  ['basic', basicProcedure._def.middlewares.at(-1)],
  ['limited', limitedProcedure._def.middlewares.at(-1)],
];

/**
 * The least role a procedure requires, read from the base procedure it was built on (its role gate is
 * the same middleware object), so every new procedure declares it without anyone writing it down.
 */
export function procedureMinRole(procedure: { _def: object }): MinRole {
  const middlewares = middlewaresOf(procedure);
  for (const [role, gate] of ROLE_GATES) if (middlewares.includes(gate)) return role;
  return 'none';
}

function middlewaresOf(procedure: { _def: object }): unknown[] {
  return (procedure._def as { middlewares?: unknown[] }).middlewares ?? [];
}

/** Whether a procedure reads the caller's key at all (required, or optional as for shared reads). */
export function procedureReadsKey(procedure: { _def: object }): boolean {
  return (
    procedureMinRole(procedure) !== 'none' ||
    middlewaresOf(procedure).includes(optionalAuthProcedure._def.middlewares.at(-1))
  );
}
