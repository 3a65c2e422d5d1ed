import { beforeAll, describe, expect, it } from 'vitest';
import { answerOf, objs, streamAll } from '../chat/chat.test-helpers.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';

/** An OpenAPI file as an admin would upload it: with trailing commas. */
const weatherSpecText = `{
  "openapi": "3.0.3",
  "info": { "title": "Weather", "description": "Forecasts and alerts", "version": "1", },
  "servers": [{ "url": "http://127.0.0.1:1/v1" },],
  "paths": {
    "/forecast/{city}": {
      "get": {
        "operationId": "getForecast",
        "summary": "Forecast for a city",
        "parameters": [
          { "name": "city", "in": "path", "required": true, "schema": { "type": "string" } },
          { "name": "days", "in": "query", "schema": { "type": "integer" } },
        ],
      },
    },
    "/alerts": {
      "post": {
        "operationId": "createAlert",
        "summary": "Create an alert",
        "requestBody": {
          "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Alert" } } },
        },
      },
    },
  },
  "components": { "schemas": { "Alert": { "type": "object", "properties": { "city": { "type": "string" } } } } },
}`;

const t = useTestRuntime();
let basic: { key: string; user_id: string };

beforeAll(async () => {
  basic = await t.createKey('basic', 'basic');
});

describe('OpenAPI actions', () => {
  it('validates a definition with trailing commas into one tool per operation', async () => {
    const { methods } = await t
      .caller(t.adminKey)
      .actions.validateCustomTool({ definition: weatherSpecText });
    expect(methods).toEqual([
      { method: 'POST', path: '/alerts', summary: 'Create an alert', name: 'createAlert' },
      { method: 'GET', path: '/forecast/{city}', summary: 'Forecast for a city', name: 'getForecast' },
    ]);
  });

  it('says where a definition is invalid', async () => {
    const admin = t.caller(t.adminKey);
    const spec = JSON.parse(JSON.stringify(weatherSpecObject()));
    delete spec.paths['/alerts'].post.operationId;
    expect(await errorOf(admin.actions.validateCustomTool({ definition: spec }))).toMatchObject({
      status: 400,
      error_code: 'INVALID_INPUT',
      detail: 'Invalid OpenAPI definition: POST /alerts: `operationId` is required',
    });
    const noDescription = weatherSpecObject();
    delete (noDescription.info as Record<string, unknown>).description;
    expect((await errorOf(admin.actions.validateCustomTool({ definition: noDescription }))).detail).toBe(
      'Invalid OpenAPI definition: `info.description` is required',
    );
    expect(
      (await errorOf(admin.actions.validateCustomTool({ definition: '{"openapi": "3.0.0",' }))).detail,
    ).toMatch(/^Invalid OpenAPI definition: \w+ at line 1, column \d+$/);
    const twoServers = { ...weatherSpecObject(), servers: [{ url: 'http://a' }, { url: 'http://b' }] };
    expect((await errorOf(admin.actions.validateCustomTool({ definition: twoServers }))).detail).toBe(
      'Invalid OpenAPI definition: `servers` must hold exactly one entry with a `url`',
    );
    const undeclared = weatherSpecObject();
    (undeclared.paths as any)['/forecast/{city}'].get.parameters = [];
    expect((await errorOf(admin.actions.validateCustomTool({ definition: undeclared }))).detail).toBe(
      'Invalid OpenAPI definition: GET /forecast/{city}: path parameter {city} is not declared',
    );
  });

  it('creates an action named from info, masks its headers, keeps masked values on update', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.actions.createCustomTool({
      definition: weatherSpecText,
      custom_headers: [
        { key: 'Authorization', value: 'Bearer s3cret-token' },
        { key: 'X-Team', value: 'blue' },
      ],
    });
    expect(created).toMatchObject({
      name: 'Weather',
      description: 'Forecasts and alerts',
      kind: 'openapi',
      enabled: true,
      passthrough_auth: false,
      oauth_config_id: null,
      mcp_server_id: null,
      custom_headers: [
        { key: 'Authorization', value: '********' },
        { key: 'X-Team', value: '********' },
      ],
    });
    expect(created.methods.map((m) => m.name)).toEqual(['createAlert', 'getForecast']);
    expect((created.definition as any).info.title).toBe('Weather');

    const raw = await t.deps.db
      .selectFrom('tools')
      .select('custom_headers_enc')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(raw.custom_headers_enc).not.toContain('s3cret-token');

    const updated = await admin.actions.updateCustomTool({
      tool_id: created.id,
      name: 'Weather service',
      custom_headers: [
        { key: 'Authorization', value: '********' },
        { key: 'X-Team', value: 'red' },
      ],
    });
    expect(updated.name).toBe('Weather service');
    const after = await t.deps.db
      .selectFrom('tools')
      .select('custom_headers_enc')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(t.deps.secrets.decrypt(after.custom_headers_enc!))).toEqual([
      { key: 'Authorization', value: 'Bearer s3cret-token' },
      { key: 'X-Team', value: 'red' },
    ]);

    const listed = await t.caller(basic.key).tools.list({});
    expect(listed).toContainEqual(
      expect.objectContaining({ id: created.id, kind: 'openapi', mcp_server_id: null }),
    );
    expect(await t.caller(basic.key).actions.getTool({ tool_id: created.id })).toEqual(updated);
  });

  it('refuses pass-through without OIDC, and built-in tools cannot be modified', async () => {
    const admin = t.caller(t.adminKey);
    expect(
      await errorOf(admin.actions.createCustomTool({ definition: weatherSpecText, passthrough_auth: true })),
    ).toMatchObject({ status: 400, detail: expect.stringContaining('no OIDC configured') });
    expect(await errorOf(admin.actions.updateCustomTool({ tool_id: 1, name: 'x' }))).toMatchObject({
      status: 400,
      detail: 'Tool 1 is built in and cannot be modified',
    });
    expect(await errorOf(admin.actions.deleteCustomTool({ tool_id: 1 }))).toMatchObject({ status: 400 });
    expect(await errorOf(admin.actions.getTool({ tool_id: 99999 }))).toMatchObject({
      status: 404,
      error_code: 'TOOL_NOT_FOUND',
    });
    expect(
      await errorOf(admin.actions.createCustomTool({ definition: weatherSpecText, oauth_config_id: 4242 })),
    ).toMatchObject({ status: 400, detail: 'OAuth configuration 4242 does not exist' });
  });

  it('needs an admin to manage actions', async () => {
    const user = t.caller(basic.key);
    expect((await errorOf(user.actions.createCustomTool({ definition: weatherSpecText }))).status).toBe(403);
    expect((await errorOf(user.actions.validateCustomTool({ definition: weatherSpecText }))).status).toBe(
      403,
    );
    expect((await errorOf(t.caller().actions.getTool({ tool_id: 1 }))).status).toBe(401);
  });

  it('enables an action only on agents that list it, and deleting it removes it from them', async () => {
    const admin = t.caller(t.adminKey);
    const action = await admin.actions.createCustomTool({
      definition: weatherSpecText,
      name: 'Doomed weather',
    });
    const zero = await admin.personas.get({ persona_id: 0 });
    expect(zero.tools.map((x) => x.id)).not.toContain(action.id);
    const agent = await admin.personas.create({
      name: 'forecaster',
      description: '',
      system_prompt: '',
      task_prompt: '',
      datetime_aware: true,
      replace_base_system_prompt: false,
      is_public: true,
      is_featured: false,
      document_set_ids: [],
      tool_ids: [1, action.id],
    });
    expect(agent.tools.map((x) => x.id)).toEqual([1, action.id]);
    await admin.actions.deleteCustomTool({ tool_id: action.id });
    const after = await admin.personas.get({ persona_id: agent.id });
    expect(after.tools.map((x) => x.id)).toEqual([1]);
    expect((await admin.tools.list({})).map((x) => x.id)).not.toContain(action.id);
  });
});

describe('the built-in answerer', () => {
  it('lists actions but does not call them, and says so when the question needs one', async () => {
    const admin = t.caller(t.adminKey);
    const action = await admin.actions.createCustomTool({
      definition: weatherSpecText,
      name: 'Builtin weather',
    });
    const agent = await admin.personas.create({
      name: 'builtin forecaster',
      description: '',
      system_prompt: '',
      task_prompt: '',
      datetime_aware: true,
      replace_base_system_prompt: false,
      is_public: true,
      is_featured: false,
      document_set_ids: [],
      tool_ids: [1, action.id],
    });
    const lines = await streamAll(t.caller(basic.key), {
      message: 'What is the forecast for Paris?',
      chat_session_info: { persona_id: agent.id },
    });
    expect(objs(lines).some((o) => o.type === 'custom_tool_start')).toBe(false);
    expect(answerOf(lines)).toContain('`getForecast`');
    expect(answerOf(lines)).toContain('the built-in answerer cannot call actions');
    const unrelated = await streamAll(t.caller(basic.key), {
      message: 'Who wrote the handbook?',
      chat_session_info: { persona_id: agent.id },
    });
    expect(answerOf(unrelated)).not.toContain('cannot call actions');
  });
});

function weatherSpecObject(): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: { title: 'Weather', description: 'Forecasts and alerts', version: '1' },
    servers: [{ url: 'http://127.0.0.1:1/v1' }],
    paths: {
      '/forecast/{city}': {
        get: {
          operationId: 'getForecast',
          summary: 'Forecast for a city',
          parameters: [{ name: 'city', in: 'path', required: true, schema: { type: 'string' } }],
        },
      },
      '/alerts': { post: { operationId: 'createAlert', summary: 'Create an alert' } },
    },
  };
}
