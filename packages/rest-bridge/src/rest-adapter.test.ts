import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AppDeps,
  AppError,
  type Context,
  createInnerContext,
  type KasMeta,
  type Logger,
} from '@kas/server';
import { initTRPC } from '@trpc/server';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRestAdapter } from './rest-adapter.ts';

const t = initTRPC.context<Context>().meta<KasMeta>().create();

const authed = t.procedure.use(({ ctx, next }) => {
  if (ctx.req.authorization !== 'Bearer ann') throw new AppError('UNAUTHENTICATED', 'Who are you?');
  return next({ ctx: { user: 'ann' } });
});

/** The signals each procedure saw, and the context signal each request had. */
const seen: { procedure: AbortSignal | undefined; ctx: AbortSignal | undefined }[] = [];

// The parameterised route is declared first: a literal path must still answer its own procedure.
const router = t.router({
  thing: t.procedure
    .meta({ openapi: { method: 'GET', path: '/thing/{thing_id}' } })
    .input(z.object({ thing_id: z.number().int(), verbose: z.boolean().optional() }))
    .output(z.object({ thing_id: z.number(), verbose: z.boolean().optional() }))
    .query(({ input }) => input),
  labels: t.procedure
    .meta({ openapi: { method: 'GET', path: '/thing/labels' } })
    .input(z.object({}))
    .output(z.array(z.string()))
    .query(() => ['naïve — 日本語 ✓', 'b']),
  mine: authed
    .meta({ openapi: { method: 'POST', path: '/mine' } })
    .input(z.object({ note: z.string().nullable() }))
    .output(z.object({ user: z.string(), note: z.string().nullable() }))
    .mutation(({ ctx, input, signal }) => {
      seen.push({ procedure: signal, ctx: ctx.req.signal });
      return { user: ctx.user, note: input.note };
    }),
  nothing: t.procedure
    .meta({ openapi: { method: 'DELETE', path: '/thing/{thing_id}' }, noContent: true })
    .input(z.object({ thing_id: z.number().int() }))
    .mutation(() => undefined),
  shadowed: t.procedure
    .meta({ openapi: { method: 'GET', path: '/hand-written' } })
    .input(z.object({}))
    .query(() => 'from the adapter'),
});

let url: string;
let server: Server;
beforeAll(async () => {
  const app = express();
  app.use(express.json());
  app.get('/hand-written', (_req, res) => {
    res.json('from the hand-written route');
  });
  app.use(
    createRestAdapter({
      router,
      // No dependencies: these procedures read only the request.
      createContext: (req) =>
        createInnerContext({} as AppDeps, {
          authorization: req.headers.authorization,
          signal: new AbortController().signal,
        }),
      logger: { error: () => {} } as unknown as Logger,
      upload: { maxFileBytes: 1024, maxRequestBytes: 4096, maxFields: 4, maxFieldBytes: 1024 },
    }).handler,
  );
  app.use((_req, res) => {
    res.status(404).json('no route');
  });
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('createRestAdapter', () => {
  it('answers a literal path with its procedure even when a parameterised path is declared first', async () => {
    const labels = await fetch(`${url}/thing/labels`);
    expect(labels.status).toBe(200);
    expect(await labels.json()).toEqual(['naïve — 日本語 ✓', 'b']);
    const thing = await fetch(`${url}/thing/7?verbose=true`);
    expect(await thing.json()).toEqual({ thing_id: 7, verbose: true });
  });

  it('leaves a path to a route registered before it (express order decides)', async () => {
    expect(await (await fetch(`${url}/hand-written`)).json()).toBe('from the hand-written route');
  });

  it('sends the output as compact UTF-8 JSON with its byte length', async () => {
    const res = await fetch(`${url}/thing/labels`);
    const text = await res.text();
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(text).toBe(JSON.stringify(['naïve — 日本語 ✓', 'b']));
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    const head = await fetch(`${url}/thing/labels`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(res.headers.get('content-length'));
    expect(await head.text()).toBe('');
    const none = await fetch(`${url}/thing/3`, { method: 'DELETE' });
    expect(none.status).toBe(204);
  });

  it('runs the middlewares with the context, the narrowed context and the request signal', async () => {
    const post = (authorization?: string) =>
      fetch(`${url}/mine`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ note: null }),
      });
    const refused = await post();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error_code: 'UNAUTHENTICATED', detail: 'Who are you?' });
    expect(seen).toEqual([]);
    const ok = await post('Bearer ann');
    expect(await ok.json()).toEqual({ user: 'ann', note: null });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.procedure).toBeInstanceOf(AbortSignal);
    expect(seen[0]!.procedure).toBe(seen[0]!.ctx);
  });

  it('answers invalid input with 422 and the envelope', async () => {
    const res = await fetch(`${url}/thing/x`);
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ error_code: 'VALIDATION_ERROR' });
  });
});
