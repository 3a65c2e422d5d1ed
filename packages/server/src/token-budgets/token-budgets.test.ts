import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { toErrorResponse } from '../errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';

let llm: FakeLlmServer;
beforeAll(async () => {
  llm = await startFakeOpenAi();
});
afterAll(async () => {
  await llm?.close();
});
const t = useTestRuntime(() => fakeOpenAiEnv(llm));

/** A slow answer of about 400 tokens: every concurrent question is admitted before the first one is saved. */
const slowAnswer = () => ({
  tokens: Array.from({ length: 40 }, () => ' budget word'.repeat(10)),
  delayMs: 10,
});

async function used(userId: string) {
  const { rows } = await sql<{ used: number }>`
    SELECT coalesce(sum(m.token_count), 0)::int AS used FROM chat_messages m
    JOIN chat_sessions s ON s.id = m.chat_session_id WHERE s.user_id = ${userId}`.execute(t.deps.db);
  return rows[0]!.used;
}

async function reservations() {
  return t.deps.db.selectFrom('token_budget_reservations').selectAll().execute();
}

describe('token budgets under concurrency', () => {
  it('answers only what the budget admits when 15 questions arrive at once, and settles each turn', async () => {
    llm.fallback = slowAnswer;
    const user = await t.createKey('basic', 'concurrent');
    const budget = await t
      .admin()
      .tokenBudgets.createUsers({ enabled: true, token_budget: 1, period_hours: 1 });
    try {
      const caller = t.caller(user.key);
      const results = await Promise.allSettled(
        Array.from({ length: 15 }, (_, i) =>
          caller.chat.sendMessage({
            message: `Question ${i} about budgets`,
            chat_session_info: {},
            stream: false,
          }),
        ),
      );
      const answered = results.filter((r) => r.status === 'fulfilled');
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [toErrorResponse(r.reason)] : []));
      // The first admitted turn reserves a full answer (more than the 1,000 tokens), so it is the only one.
      expect(answered).toHaveLength(1);
      expect(refused).toHaveLength(14);
      for (const error of refused) {
        expect(error).toMatchObject({ status: 429, error_code: 'RATE_LIMITED' });
        expect(error.detail).toContain('Token budget exceeded for user');
      }
      expect(await used(user.user_id)).toBeLessThan(1000);
      // Settled: the answer's tokens are saved and its reservation is gone, so the next question is admitted.
      expect(await reservations()).toEqual([]);
      await caller.chat.sendMessage({ message: 'One more', chat_session_info: {}, stream: false });
      expect(await reservations()).toEqual([]);
    } finally {
      await t.admin().tokenBudgets.delete({ token_id: budget.token_id });
      llm.fallback = () => ({ tokens: ['Hello.'] });
    }
  });

  it('releases the reservation of a turn whose model failed', async () => {
    const user = await t.createKey('basic', 'failing');
    const budget = await t
      .admin()
      .tokenBudgets.createUsers({ enabled: true, token_budget: 1, period_hours: 1 });
    try {
      const caller = t.caller(user.key);
      llm.enqueue({ status: 500 });
      const failed = await caller.chat
        .sendMessage({ message: 'This one fails', chat_session_info: {}, stream: false })
        .then(
          () => null,
          (error) => toErrorResponse(error),
        );
      expect(failed?.error_code).toBe('LLM_PROVIDER_ERROR');
      expect(await reservations()).toEqual([]);
      const answer = await caller.chat.sendMessage({
        message: 'Again',
        chat_session_info: {},
        stream: false,
      });
      expect(answer.answer).toBe('Hello.');
    } finally {
      await t.admin().tokenBudgets.delete({ token_id: budget.token_id });
    }
  });
});
