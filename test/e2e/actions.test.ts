import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeOpenAi } from '../fakes/openai.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
let s: TestServer;
let llm: FakeLlmServer;

beforeAll(async () => {
  llm = await startFakeOpenAi();
  s = await startTestServer({
    env: { KAS_OUTBOUND_ALLOWLIST: '127.0.0.1', KAS_LLM_PROVIDER: 'openai', KAS_LLM_BASE_URL: llm.baseURL },
  });
});
afterAll(async () => {
  await s?.close();
  await llm?.close();
});

describe('actions over HTTP', () => {
  it('runs the actions example: an OpenAPI action and an MCP server called in chat, then removed', async () => {
    llm.enqueue(
      { toolCalls: [{ id: 'a', name: 'getForecast', arguments: '{"city":"Lisbon"}' }] },
      { toolCalls: [{ id: 'b', name: 'celsius_to_fahrenheit', arguments: '{"celsius":24}' }] },
      { tokens: ['Sunny, 75.2°F in Lisbon.'] },
    );
    const { stdout } = await run(process.execPath, [join(root, 'examples/actions.ts')], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey },
    });
    expect(stdout).toContain('operations: GET /forecast/{city} (getForecast)');
    expect(stdout).toContain('calling getForecast({"city":"Lisbon"})');
    expect(stdout).toContain('→ {"city":"Lisbon","forecast":"sunny, 24°C"}');
    expect(stdout).toContain('→ "75.2"');
    expect(stdout).toContain('answer: Sunny, 75.2°F in Lisbon.');
    expect(stdout).toContain('MCP server removed: its tool left the agent');
  }, 60_000);
});
