import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { errorOf } from './chat.test-helpers.ts';

let llm: FakeLlmServer;
beforeAll(async () => {
  llm = await startFakeOpenAi();
});
afterAll(async () => {
  await llm?.close();
});
// fake-model is the default; small-model is the one more an admin allowed.
const t = useTestRuntime(() => ({ ...fakeOpenAiEnv(llm), KAS_LLM_MODELS: 'small-model' }));

const agent = (name: string, model: string | null) => ({
  name,
  description: '',
  system_prompt: '',
  task_prompt: '',
  datetime_aware: false,
  replace_base_system_prompt: false,
  is_public: true,
  is_featured: false,
  document_set_ids: [],
  tool_ids: [],
  llm_model_version_override: model,
});

async function modelUsed(key: string, model_name: string, persona_id = 0) {
  await t.caller(key).chat.sendMessage({
    message: 'Hello?',
    chat_session_info: { persona_id },
    stream: false,
    llm_override: { model_name },
  });
  return llm.requests.at(-1)!.model;
}

describe('llm_override.model_name', () => {
  it('takes only the models an admin allowed from a limited key, any model from an admin', async () => {
    const limited = await t.createKey('limited', 'limited');
    const refused = await errorOf(
      t.caller(limited.key).chat.sendMessage({
        message: 'Hello?',
        chat_session_info: {},
        stream: false,
        llm_override: { model_name: 'very-expensive-model' },
      }),
    );
    expect(refused).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    expect(refused.detail).toContain('llm_override.model_name');
    expect(refused.detail).toContain('"small-model"');
    expect(llm.requests.some((r) => r.model === 'very-expensive-model')).toBe(false);

    expect(await modelUsed(limited.key, 'small-model')).toBe('small-model');
    expect(await modelUsed(limited.key, 'fake-model')).toBe('fake-model');
    expect(await modelUsed(t.adminKey, 'very-expensive-model')).toBe('very-expensive-model');
  });

  it("allows an agent's own model, and a non-admin cannot give an agent a model outside the list", async () => {
    const limited = await t.createKey('limited', 'limited-2');
    const basic = await t.createKey('basic', 'basic');
    const { id } = await t.admin().personas.create(agent('Premium', 'premium-model'));
    expect(await modelUsed(limited.key, 'premium-model', id)).toBe('premium-model');
    // The agent's model is allowed in that agent's chats only.
    const elsewhere = await errorOf(modelUsed(limited.key, 'premium-model'));
    expect(elsewhere).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });

    const own = await errorOf(t.caller(basic.key).personas.create(agent('Mine', 'premium-model')));
    expect(own).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    expect(own.detail).toContain('llm_model_version_override');
    const allowed = await t.caller(basic.key).personas.create(agent('Mine', 'small-model'));
    const update = await errorOf(
      t.caller(basic.key).personas.update({ ...agent('Mine', 'premium-model'), persona_id: allowed.id }),
    );
    expect(update).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
  });
});
