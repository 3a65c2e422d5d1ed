import { type AnyTRPCProcedure, initTRPC, TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { invokeProcedure } from './invoke.ts';

interface TestContext {
  user: string | null;
  seen: unknown[];
}

const t = initTRPC.context<TestContext>().meta<{ label: string }>().create();

/** Records what each middleware is given (functions by their presence only). */
const recorder = (name: string) =>
  t.middleware(async (opts) => {
    const { next, getRawInput, ctx, ...rest } = opts;
    ctx.seen.push({
      name,
      ...rest,
      getRawInput: typeof getRawInput,
      next: typeof next,
      ctx: { ...ctx, seen: 'seen' },
    });
    return next();
  });

const authed = t.procedure
  .use(recorder('first'))
  .use(async ({ ctx, next }) => {
    if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'who are you' });
    return next({ ctx: { user: ctx.user.toUpperCase(), role: 'admin' as const } });
  })
  .use(recorder('after ctx'));

const procedures: Record<string, AnyTRPCProcedure> = {
  plain: t.procedure
    .meta({ label: 'plain' })
    .input(z.object({ n: z.coerce.number() }))
    .output(z.object({ twice: z.number() }))
    .query(({ input }) => ({ twice: input.n * 2 })),
  authed: authed
    .meta({ label: 'authed' })
    .input(z.object({ a: z.string() }))
    .input(z.object({ b: z.string().default('B') }))
    .use(recorder('after inputs'))
    .output(z.object({ user: z.string(), role: z.string(), a: z.string(), b: z.string() }))
    .mutation(({ ctx, input }) => ({ user: ctx.user, role: ctx.role, ...input })),
  rewrites: t.procedure
    .use(({ next }) => next({ input: { replaced: true } }))
    .use(({ next }) => next({ getRawInput: async () => ({ raw: 'replaced' }) }))
    .use(recorder('rewritten'))
    .input(z.object({ raw: z.string() }))
    .query(({ input }) => input),
  throws: t.procedure.input(z.object({})).query(() => {
    throw new Error('boom');
  }),
  throwsValue: t.procedure.query(() => {
    throw 'a string';
  }),
  badOutput: t.procedure.output(z.object({ id: z.number() })).query(() => ({ id: 'not a number' }) as never),
  // A parser that is not a Zod schema: its middleware runs as tRPC wrote it.
  functionParser: t.procedure
    .input((value: unknown) => {
      if (typeof value !== 'object' || value === null) throw new Error('not an object');
      return value as { f: string };
    })
    .query(({ input }) => input),
  swallows: t.procedure
    .use(async () => ({ ok: true, data: 'no next', marker: 'middlewareMarker' }) as never)
    .query(() => 'unused'),
};

type Outcome = { data: unknown; seen: unknown[] } | { error: unknown; seen: unknown[] };

function describeError(error: unknown) {
  if (!(error instanceof Error)) return { thrown: error };
  const cause = error.cause;
  return {
    class: error.constructor.name,
    code: (error as { code?: unknown }).code,
    message: error.message,
    cause: cause instanceof Error ? { class: cause.constructor.name, message: cause.message } : cause,
  };
}

async function outcome(run: (ctx: TestContext) => Promise<unknown>, user: string | null): Promise<Outcome> {
  const ctx: TestContext = { user, seen: [] };
  try {
    return { data: await run(ctx), seen: ctx.seen };
  } catch (error) {
    return { error: describeError(error), seen: ctx.seen };
  }
}

describe('invokeProcedure', () => {
  const signal = new AbortController().signal;
  const inputs: Record<string, unknown> = {
    plain: { n: '21' },
    authed: { a: 'A' },
    rewrites: { raw: 'original' },
    throws: {},
    throwsValue: undefined,
    badOutput: undefined,
    swallows: undefined,
    functionParser: { f: 'F' },
  };
  const invalid: Record<string, unknown> = { plain: { n: 'x' }, authed: { a: 1 }, functionParser: 'text' };
  for (const [name, procedure] of Object.entries(procedures))
    for (const user of ['ann', null])
      for (const [label, input] of [
        ['valid', inputs[name]],
        ['invalid', invalid[name]],
      ] as const) {
        if (label === 'invalid' && !(name in invalid)) continue;
        it(`${name} (${label} input, ${user ? 'with' : 'without'} a user) ends exactly as tRPC's own call`, async () => {
          const call = {
            path: `test.${name}`,
            getRawInput: async () => input,
            signal,
          };
          const ours = await outcome(
            (ctx) => invokeProcedure(procedure, { ...call, ctx: ctx as never }),
            user,
          );
          const theirs = await outcome(
            (ctx) =>
              (procedure as unknown as (opts: object) => Promise<unknown>)({
                ...call,
                ctx,
                type: procedure._def.type,
                batchIndex: 0,
              }),
            user,
          );
          expect(ours).toEqual(theirs);
        });
      }

  it('ends a streamed answer that fails midway exactly as tRPC does: the lines before, then its error', async () => {
    const streams = t.procedure.input(z.object({ upTo: z.number() })).query(async function* ({ input }) {
      for (let i = 0; i < input.upTo; i++) yield i;
      throw new Error('the stream broke');
    });
    const consume = async (run: () => Promise<unknown>) => {
      const lines: unknown[] = [];
      try {
        for await (const line of (await run()) as AsyncIterable<unknown>) lines.push(line);
        return { lines };
      } catch (error) {
        return { lines, error: describeError(error) };
      }
    };
    const call = { path: 'streams', getRawInput: async () => ({ upTo: 2 }), signal };
    const ctx = { user: null, seen: [] };
    const ours = await consume(() => invokeProcedure(streams, { ...call, ctx: ctx as never }));
    const theirs = await consume(() =>
      (streams as unknown as (opts: object) => Promise<unknown>)({
        ...call,
        ctx,
        type: 'query',
        batchIndex: 0,
      }),
    );
    expect(ours).toEqual(theirs);
    expect(ours).toMatchObject({ lines: [0, 1], error: { message: 'the stream broke' } });
  });

  it('is compared on answers that differ (the comparison can fail)', async () => {
    const a = await outcome(
      (ctx) =>
        invokeProcedure(procedures.plain!, {
          path: 'p',
          ctx: ctx as never,
          getRawInput: async () => ({ n: 1 }),
          signal,
        }),
      null,
    );
    const b = await outcome(
      (ctx) =>
        invokeProcedure(procedures.plain!, {
          path: 'p',
          ctx: ctx as never,
          getRawInput: async () => ({ n: 2 }),
          signal,
        }),
      null,
    );
    expect(a).not.toEqual(b);
    expect(a).toEqual({ data: { twice: 2 }, seen: [] });
  });
});
