import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import { type FakeOpenApiService, startFakeOpenApiService } from '../../../../test/fakes/openapi-service.ts';
import { answerOf, objs, streamAll } from '../chat/chat.test-helpers.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { actionsEnv, agentInput } from './actions.test-helpers.ts';

let llm: FakeLlmServer;
let api: FakeOpenApiService;
let user: { key: string; user_id: string };
let actionId: number;
let agentId: number;

const agentFor = (tool_ids: number[]) => agentInput(`agent ${tool_ids.join('-')}`, tool_ids);

beforeAll(async () => {
  [llm, api] = await Promise.all([startFakeOpenAi(), startFakeOpenApiService()]);
});
afterAll(async () => {
  await Promise.all([llm?.close(), api?.close()]);
});
const t = useTestRuntime(() =>
  actionsEnv(llm.baseURL, {
    KAS_ACTION_MAX_RESPONSE_BYTES: '4096',
    KAS_ACTION_TIMEOUT_MS: '1000',
  }),
);
beforeAll(async () => {
  user = await t.createKey('basic', 'user');
  const admin = t.caller(t.adminKey);
  const action = await admin.actions.createCustomTool({
    definition: api.specText(),
    custom_headers: [{ key: 'X-Api-Key', value: 'weather-key-1' }],
  });
  actionId = action.id;
  agentId = (await admin.personas.create(agentFor([1, actionId]))).id;
});

describe('chat with OpenAPI actions', () => {
  it('offers every operation of an enabled action, calls it and streams the call', async () => {
    llm.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'getForecast', arguments: '{"city":"Paris","days":2}' }] },
      { tokens: ['Sunny ', 'twice.'] },
    );
    const before = llm.requests.length;
    const lines = await streamAll(t.caller(user.key), {
      message: 'What is the weather forecast for Paris?',
      chat_session_info: { persona_id: agentId },
    });
    const first = llm.requests[before]!;
    expect(first.tools.map((x: any) => x.function.name).sort()).toEqual(
      ['createAlert', 'getBig', 'getForecast', 'getSlow', 'internal_search'].sort(),
    );
    const forecastTool = first.tools.find((x: any) => x.function.name === 'getForecast');
    expect(forecastTool.function.parameters.properties).toMatchObject({ city: { type: 'string' } });

    const packets = objs(lines).filter((o) => o.type.startsWith('custom_tool') || o.type === 'section_end');
    expect(packets).toEqual([
      { type: 'custom_tool_start', tool_name: 'getForecast', tool_id: actionId },
      { type: 'custom_tool_args', tool_name: 'getForecast', tool_args: { city: 'Paris', days: 2 } },
      {
        type: 'custom_tool_delta',
        tool_name: 'getForecast',
        tool_id: actionId,
        response_type: 'json',
        data: { city: 'Paris', days: 2, forecast: ['sunny', 'sunny'] },
        file_ids: [],
        error: null,
      },
      { type: 'section_end' },
    ]);
    expect(answerOf(lines)).toBe('Sunny twice.');
    const received = api.requests.at(-1)!;
    expect(received.url).toBe('/v1/forecast/Paris?days=2');
    expect(received.headers['x-api-key']).toBe('weather-key-1');

    const second = llm.requests[before + 1]!;
    const toolMessage = second.messages.find((m: any) => m.role === 'tool');
    expect(JSON.parse(toolMessage.content)).toEqual({ city: 'Paris', days: 2, forecast: ['sunny', 'sunny'] });
    expect(second.messages.find((m: any) => m.role === 'assistant' && m.tool_calls)).toBeTruthy();

    const sessionId = (lines.find((l) => 'chat_session_id' in l) as { chat_session_id: string })
      .chat_session_id;
    const session = await t.caller(user.key).chat.getSession({ session_id: sessionId });
    expect(session.messages.at(-1)!.tool_calls).toEqual([
      {
        tool_name: 'getForecast',
        tool_id: actionId,
        tool_arguments: { city: 'Paris', days: 2 },
        response: { city: 'Paris', days: 2, forecast: ['sunny', 'sunny'] },
      },
    ]);
  });

  it('sends a JSON body and feeds errors (too large, timeout, missing parameter) back to the model', async () => {
    llm.enqueue(
      {
        toolCalls: [
          { id: 'a', name: 'createAlert', arguments: '{"requestBody":{"city":"Oslo","level":"red"}}' },
          { id: 'b', name: 'getBig', arguments: '{}' },
          { id: 'c', name: 'getSlow', arguments: '{}' },
          { id: 'd', name: 'getForecast', arguments: '{}' },
        ],
      },
      { tokens: ['Done.'] },
    );
    const before = llm.requests.length;
    const lines = await streamAll(t.caller(user.key), {
      message: 'Create a red alert for Oslo',
      chat_session_info: { persona_id: agentId },
    });
    const deltas = objs(lines).filter((o) => o.type === 'custom_tool_delta');
    expect(deltas.map((d) => (d as { error: { message: string } | null }).error?.message ?? null)).toEqual([
      null,
      'The response exceeded 4096 bytes',
      expect.stringMatching(/1000 ms/),
      'Missing required path parameter city',
    ]);
    expect((deltas[0] as { data: unknown }).data).toEqual({ id: 'alert-1', city: 'Oslo', level: 'red' });
    const alertRequest = api.requests.find((r) => r.method === 'POST')!;
    expect(JSON.parse(alertRequest.body)).toEqual({ city: 'Oslo', level: 'red' });
    expect(alertRequest.headers['content-type']).toBe('application/json');
    const toolMessages = llm.requests[before + 1]!.messages.filter((m: any) => m.role === 'tool');
    expect(toolMessages).toHaveLength(4);
    expect(JSON.parse(toolMessages[1].content).error).toBe('The response exceeded 4096 bytes');
    expect(answerOf(lines)).toBe('Done.');
  });

  it('does not offer an action to an agent that does not list it', async () => {
    const other = await t.caller(t.adminKey).personas.create(agentFor([1]));
    const before = llm.requests.length;
    await streamAll(t.caller(user.key), {
      message: 'Forecast for Rome?',
      chat_session_info: { persona_id: other.id },
    });
    expect(llm.requests[before]!.tools.map((x: any) => x.function.name)).toEqual(['internal_search']);
  });

  it('bounds the tool cycles: the last model call must answer', async () => {
    const call = { id: 'loop', name: 'getForecast', arguments: '{"city":"Nice"}' };
    llm.enqueue(...Array.from({ length: 5 }, () => ({ toolCalls: [call] })), { tokens: ['Enough.'] });
    const before = llm.requests.length;
    const lines = await streamAll(t.caller(user.key), {
      message: 'Forecast for Nice, again and again',
      chat_session_info: { persona_id: agentId },
    });
    const requests = llm.requests.slice(before);
    expect(requests).toHaveLength(6);
    expect(requests.at(-1)!.tools).toBeUndefined();
    expect(objs(lines).filter((o) => o.type === 'custom_tool_start')).toHaveLength(5);
    expect(answerOf(lines)).toBe('Enough.');
  });

  it('refuses private addresses outside the allowlist, and the model is told', async () => {
    const admin = t.caller(t.adminKey);
    const spec = { ...api.spec(), servers: [{ url: 'http://10.255.255.1/v1' }] };
    const blocked = await admin.actions.createCustomTool({ definition: spec, name: 'Internal weather' });
    const agent = await admin.personas.create(agentFor([blocked.id]));
    llm.enqueue(
      { toolCalls: [{ id: 'x', name: 'getForecast', arguments: '{"city":"Bern"}' }] },
      { tokens: ['No.'] },
    );
    const lines = await streamAll(t.caller(user.key), {
      message: 'Forecast Bern',
      chat_session_info: { persona_id: agent.id },
    });
    const delta = objs(lines).find((o) => o.type === 'custom_tool_delta') as { error: { message: string } };
    expect(delta.error.message).toMatch(/^Refused to connect to 10\.255\.255\.1/);
  });
});
