import type { Config } from '../config.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { createBuiltinProvider } from './builtin.ts';
import type { LlmProvider } from './llm.types.ts';
import { createOpenAiCompatibleProvider } from './openai-compatible.ts';

export * from './llm.types.ts';

/** The configured model: KAS_LLM_PROVIDER picks it, the built-in answerer when none is configured. */
export function createLlmProvider(config: Config): LlmProvider {
  const options = {
    baseURL: config.KAS_LLM_BASE_URL,
    apiKey: config.KAS_LLM_API_KEY,
    model: config.KAS_LLM_MODEL,
    contextWindow: config.KAS_LLM_CONTEXT_TOKENS,
  };
  switch (config.KAS_LLM_PROVIDER) {
    case 'openai':
      return createOpenAiCompatibleProvider(options);
    case 'anthropic':
      return createAnthropicProvider(options);
    default:
      return createBuiltinProvider();
  }
}
