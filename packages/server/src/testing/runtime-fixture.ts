import { afterAll, beforeAll } from 'vitest';
import { eventPass, schedulerPass } from '../connectors/scheduler.ts';
import { createTestRuntime, type TestRuntime } from './test-runtime.ts';

type Env = Record<string, string>;

/** A test file's runtime: the runtime's parts and callers, and the verbs tests repeat. */
export interface RuntimeFixture extends Omit<TestRuntime, 'close'> {
  /** A tRPC caller with the runtime's admin key. */
  admin(): ReturnType<TestRuntime['caller']>;
  /** One scheduler pass, as the worker runs it: starts due attempts and waits for them. */
  pass(): ReturnType<typeof schedulerPass>;
  /** One pass over the queued connector events, as the worker runs it. */
  events(): ReturnType<typeof eventPass>;
}

/**
 * One runtime (a fresh migrated database of its own) for the tests of the file or `describe` that calls
 * this, started in `beforeAll` and closed in `afterAll` — the hooks are registered where it is called, so
 * hooks registered before it run around it (start fakes first, close them after the runtime). `env` adds
 * settings; a function is read when the runtime starts, so it may name what an earlier `beforeAll` started.
 * The fixture's members are read inside tests and hooks, never while the file is being collected.
 */
export function useTestRuntime(env: Env | (() => Env | Promise<Env>) = {}): RuntimeFixture {
  let current: TestRuntime | undefined;
  const started = (): TestRuntime => {
    if (!current) throw new Error('The test runtime starts in beforeAll: use it inside tests and hooks');
    return current;
  };
  beforeAll(async () => {
    current = await createTestRuntime(typeof env === 'function' ? await env() : env);
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
  return {
    get runtime() {
      return started().runtime;
    },
    get deps() {
      return started().deps;
    },
    get config() {
      return started().config;
    },
    get adminKey() {
      return started().adminKey;
    },
    caller: (key, request) => started().caller(key, request),
    createKey: (role, name) => started().createKey(role, name),
    admin: () => started().caller(started().adminKey),
    pass: () => schedulerPass(started().deps, new AbortController().signal),
    events: () => eventPass(started().deps, new AbortController().signal),
  };
}
