import type { Context } from '@kas/server';
import { type AnyTRPCProcedure, getTRPCErrorFromUnknown, TRPCError } from '@trpc/server';

/** What each tRPC middleware returns (tRPC's own `MiddlewareResult`). */
type MiddlewareResult =
  | { marker: string; ok: true; data: unknown; ctx?: unknown }
  | { marker: string; ok: false; error: Error };

type Middleware = (opts: object) => Promise<MiddlewareResult>;

interface NextOptions {
  ctx?: object;
  input?: unknown;
  getRawInput?: () => Promise<unknown>;
}

/** tRPC's marker on a middleware result (`middlewareMarker`). */
const MARKER = 'middlewareMarker';

/**
 * Runs a procedure's middleware chain exactly as tRPC's `callRecursive` does (the same options to each
 * middleware, the same merging of `next({ ctx, input, getRawInput })`, a throw becoming `{ ok: false }`
 * with the same TRPCError), but builds each middleware's options as one object literal instead of
 * tRPC's two transpiled object spreads per middleware, which were an eighth of a cached GET's time.
 * Resolves the procedure's data or throws its error, as calling the procedure does.
 */
export async function invokeProcedure(
  procedure: AnyTRPCProcedure,
  call: {
    path: string;
    ctx: Context;
    getRawInput: () => Promise<unknown>;
    signal: AbortSignal | undefined;
  },
): Promise<unknown> {
  const def = procedure._def as unknown as { middlewares: Middleware[]; meta: unknown; type: string };
  const { middlewares, meta, type } = def;
  const { path, signal } = call;
  const callAt = async (
    index: number,
    ctx: object,
    input: unknown,
    getRawInput: () => Promise<unknown>,
  ): Promise<MiddlewareResult> => {
    try {
      return await middlewares[index]!({
        path,
        getRawInput,
        ctx,
        type,
        signal,
        batchIndex: 0,
        meta,
        input,
        next: (nextOptions?: NextOptions) =>
          callAt(
            index + 1,
            nextOptions?.ctx ? { ...ctx, ...nextOptions.ctx } : ctx,
            nextOptions && 'input' in nextOptions ? nextOptions.input : input,
            nextOptions?.getRawInput ?? getRawInput,
          ),
      });
    } catch (cause) {
      return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: MARKER };
    }
  };
  const result = await callAt(0, call.ctx, undefined, call.getRawInput);
  if (!result)
    throw new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message: 'No result from middlewares - did you forget to `return next()`?',
    });
  if (!result.ok) throw result.error;
  return result.data;
}
