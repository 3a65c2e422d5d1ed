import type { Actor } from '../auth/roles.ts';
import { mcpToolLoader } from './service/mcp.ts';
import { type AgentTool, loadAgentTools, type ToolRunnerCtx } from './tool-runner.ts';

export {
  createCustomTool,
  deleteCustomTool,
  getTool,
  updateCustomTool,
  validateDefinition,
} from './service/custom-tools.ts';
export {
  createMcpServer,
  deleteMcpServer,
  deleteUserCredentials,
  fetchMcpServerTools,
  getMcpServer,
  listMcpServers,
  saveUserCredentials,
  updateMcpServer,
} from './service/mcp.ts';
export { connectMcpOauth, mcpOauthCallback } from './service/mcp-oauth.ts';
export { type AgentTool, resultForModel } from './tool-runner.ts';

/** The tools of an agent's actions (OpenAPI and MCP) that this user can call in this turn, and notes on the others. */
export function agentTools(args: {
  ctx: ToolRunnerCtx;
  actor: Actor;
  toolIds: readonly number[];
}): Promise<{ tools: AgentTool[]; notes: string[] }> {
  return loadAgentTools({ ...args, loaders: { mcp: mcpToolLoader } });
}
export {
  createOauthConfig,
  deleteOauthConfig,
  disconnectOauth,
  getOauthConfig,
  initiateOauth,
  listOauthConfigs,
  oauthCallback,
  updateOauthConfig,
} from './service/oauth-configs.ts';
