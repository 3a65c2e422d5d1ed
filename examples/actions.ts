/**
 * Actions end to end: serves a small OpenAPI service and an MCP server (built with the MCP SDK) on random
 * ports, registers both with kas, enables one tool of each on a new agent, and asks a question that calls them,
 * printing the tool calls as they stream. Removing the MCP server then removes its tool from the agent.
 * Usage: KAS_URL=http://127.0.0.1:8080 KAS_API_KEY=<admin key> npm run -s example -- actions
 * kas must allow the local services (KAS_OUTBOUND_ALLOWLIST=127.0.0.1) and use a tool-calling model
 * (KAS_LLM_PROVIDER=openai or anthropic); the built-in answerer lists actions but does not call them.
 * Exits non-zero on any mismatch.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createKasClient, isPacket } from '@kas/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const baseUrl = process.env.KAS_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.KAS_API_KEY;
if (!apiKey) {
  console.error('Set KAS_API_KEY to an admin key.');
  process.exit(2);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) {
    console.error(`MISMATCH: ${message}`);
    process.exit(1);
  }
}

async function listen(server: ReturnType<typeof createServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// 1. A weather API described by OpenAPI.
const weather = createServer((req, res) => {
  const m = /^\/v1\/forecast\/([^/?]+)/.exec(req.url ?? '');
  res.writeHead(m ? 200 : 404, { 'content-type': 'application/json' });
  res.end(JSON.stringify(m ? { city: decodeURIComponent(m[1] as string), forecast: 'sunny, 24°C' } : {}));
});
const weatherUrl = await listen(weather);
// The file as people write it, trailing commas included.
const specText = `{
  "openapi": "3.0.3",
  "info": { "title": "Weather", "description": "City forecasts", "version": "1", },
  "servers": [{ "url": "${weatherUrl}/v1" }],
  "paths": {
    "/forecast/{city}": {
      "get": {
        "operationId": "getForecast",
        "summary": "Forecast for a city",
        "parameters": [{ "name": "city", "in": "path", "required": true, "schema": { "type": "string" } },],
      },
    },
  },
}`;

// 2. An MCP server with one tool.
const mcpHttp = createServer(async (req, res) => {
  const mcp = new McpServer({ name: 'converter', version: '1.0.0' });
  mcp.registerTool(
    'celsius_to_fahrenheit',
    { description: 'Converts °C to °F', inputSchema: { celsius: z.number() } },
    async ({ celsius }) => ({ content: [{ type: 'text', text: String((celsius * 9) / 5 + 32) }] }),
  );
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => void mcp.close());
  await mcp.connect(transport);
  await transport.handleRequest(req, res);
});
const mcpUrl = `${await listen(mcpHttp)}/mcp`;

const kas = createKasClient({ baseUrl, apiKey });
const methods = await kas.actions.validateOpenApi(specText);
console.log('operations:', methods.map((m) => `${m.method} ${m.path} (${m.name})`).join(', '));
const action = await kas.actions.createOpenApiAction({ definition: specText, passthrough_auth: false });
const server = await kas.actions.createMcpServer({
  name: 'Converter',
  server_url: mcpUrl,
  transport: 'STREAMABLE_HTTP',
  auth_type: 'NONE',
  auth_performer: 'ADMIN',
});
const { tools } = await kas.actions.fetchMcpTools(server.server_id);
check(tools.length === 1, `expected one MCP tool, got ${tools.length}`);
const convert = tools[0]!;
console.log(`MCP tools: ${tools.map((t) => t.name).join(', ')}`);

const agent = await kas.agents.create({
  name: 'Weather helper',
  description: 'Forecasts with conversions',
  system_prompt: 'Use the tools to answer.',
  task_prompt: '',
  datetime_aware: false,
  replace_base_system_prompt: false,
  is_public: true,
  is_featured: false,
  document_set_ids: [],
  tool_ids: [action.id, convert.id],
});

let answer = '';
const called: string[] = [];
for await (const line of kas.chat.stream({
  message: 'What is the forecast for Lisbon, in Fahrenheit?',
  chat_session_info: { persona_id: agent.id },
})) {
  if (!isPacket(line)) continue;
  const obj = line.obj;
  if (obj.type === 'custom_tool_start') called.push(obj.tool_name);
  if (obj.type === 'custom_tool_args')
    console.log(`calling ${obj.tool_name}(${JSON.stringify(obj.tool_args)})`);
  if (obj.type === 'custom_tool_delta') console.log(`  → ${JSON.stringify(obj.data)}`);
  if (obj.type === 'message_delta') answer += obj.content;
}
console.log(`answer: ${answer}`);
check(
  called.includes('getForecast') && called.includes('celsius_to_fahrenheit'),
  `tools called: ${called.join(', ')}`,
);

await kas.actions.deleteMcpServer(server.server_id);
const after = await kas.agents.get(agent.id);
check(!after.tools.some((t) => t.id === convert.id), 'the MCP tool is still on the agent');
console.log('MCP server removed: its tool left the agent');
weather.close();
mcpHttp.close();
