import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ZodError, type ZodType } from 'zod';
import * as apiKeysService from './api-keys/api-keys.service.ts';
import { type Role, roleAtLeast } from './auth/roles.ts';
import type { Context } from './context.ts';
import { AppError, type ErrorCode, INTERNAL_ERROR_DETAIL } from './errors.ts';
import { formatZodError } from './validation.ts';

/** Procedure meta: the OpenAPI route, plus `noContent` for endpoints that answer 204 with no body. */
export type KasMeta = OpenApiMeta<{
  noContent?: boolean;
  /** The schema of one line of an NDJSON (`text/event-stream`) answer the route can give instead. */
  streamLine?: ZodType;
}>;

/** The error body of both transports, derived from whatever was thrown. */
export function toErrorBody(error: unknown): {
  status: number;
  error_code: ErrorCode;
  detail: string;
  headers: Record<string, string>;
} {
  if (error instanceof AppError)
    return {
      status: error.status,
      error_code: error.error_code,
      detail: error.detail,
      headers: error.headers,
    };
  if (error instanceof TRPCError) {
    if (error.cause instanceof AppError) return toErrorBody(error.cause);
    // Input validation failures are BAD_REQUEST with a ZodError cause; output validation failures are
    // INTERNAL_SERVER_ERROR with one, and must stay a 500.
    if (error.code === 'BAD_REQUEST' && error.cause instanceof ZodError) {
      return {
        status: 422,
        error_code: 'VALIDATION_ERROR',
        detail: formatZodError(error.cause),
        headers: {},
      };
    }
    if (error.code === 'PARSE_ERROR' || error.code === 'BAD_REQUEST') {
      return { status: 422, error_code: 'VALIDATION_ERROR', detail: 'Malformed request', headers: {} };
    }
    if (error.code === 'NOT_FOUND')
      return { status: 404, error_code: 'NOT_FOUND', detail: 'No such procedure', headers: {} };
    if (error.code === 'METHOD_NOT_SUPPORTED') {
      return {
        status: 405,
        error_code: 'METHOD_NOT_ALLOWED',
        detail: 'Method not supported for this procedure',
        headers: {},
      };
    }
  }
  return { status: 500, error_code: 'INTERNAL_ERROR', detail: INTERNAL_ERROR_DETAIL, headers: {} };
}

const t = initTRPC
  .context<Context>()
  .meta<KasMeta>()
  .create({
    isDev: false,
    transformer: superjson,
    errorFormatter({ shape, error }) {
      const body = toErrorBody(error);
      return {
        message: body.detail,
        code: shape.code,
        data: { httpStatus: body.status, error_code: body.error_code, detail: body.detail },
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const middleware = t.middleware;

// Failures are logged where they leave the process (the REST adapter and the /api/trpc onError), so
// procedures carry no logging middleware of their own.
export const publicProcedure = t.procedure;

function requireRole(minimum: Role) {
  return t.middleware(async ({ ctx, next }) => {
    const actor = ctx.actor ?? (await apiKeysService.authenticate({ ctx, authorization: ctx.authorization }));
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
    // tRPC merges this into the context; spreading the whole context here would copy it again.
    return next({ ctx: { actor } });
  });
}

/** Authenticates when a key is sent and runs without one: only for publicly shared reads. */
export const optionalAuthProcedure = publicProcedure.use(async ({ ctx, next }) => {
  if (!ctx.authorization) return next({ ctx: { actor: null } });
  const actor = ctx.actor ?? (await apiKeysService.authenticate({ ctx, authorization: ctx.authorization }));
  const headers = await ctx.rateLimiter.consume(actor.rate_limit_key);
  for (const [name, value] of Object.entries(headers)) ctx.setHeader(name, value);
  return next({ ctx: { actor } });
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
