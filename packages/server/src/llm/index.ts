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

/**
 * The models anyone may pick: the provider's default (KAS_LLM_MODEL) and those listed in KAS_LLM_MODELS.
 * Admins may pick any model of the provider; an agent's own model is allowed in its chats.
 */
export function allowedModels(
  config: Pick<Config, 'KAS_LLM_MODELS'>,
  llm: Pick<LlmProvider, 'defaultModel'>,
) {
  return [...new Set([llm.defaultModel, ...config.KAS_LLM_MODELS])];
}
