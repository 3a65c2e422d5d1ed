/** A public agent with these tools and nothing else. */
export const agentInput = (name: string, tool_ids: number[]) => ({
  name,
  description: '',
  system_prompt: '',
  task_prompt: '',
  datetime_aware: false,
  replace_base_system_prompt: false,
  is_public: true,
  is_featured: false,
  document_set_ids: [],
  tool_ids,
});

/**
 * Settings of a runtime whose model is the fake OpenAI at `llmBaseUrl` and whose actions may reach the
 * local fakes (the outbound guard refuses loopback otherwise), without retries, plus any other settings.
 */
export function actionsEnv(llmBaseUrl: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    KAS_LLM_PROVIDER: 'openai',
    KAS_LLM_BASE_URL: llmBaseUrl,
    KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
    KAS_OUTBOUND_RETRIES: '0',
    ...env,
  };
}
