import type { Config } from '../config.ts';
import { causeChain, type Logger, loggableUrl } from '../logger.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { createBuiltinProvider } from './builtin.ts';
import { type LlmProvider, LlmProviderError } from './llm.types.ts';
import { createOpenAiCompatibleProvider } from './openai-compatible.ts';

export * from './llm.types.ts';

/** Where each provider's SDK sends requests when KAS_LLM_BASE_URL is unset. */
export const DEFAULT_LLM_ENDPOINTS = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
} as const;

/** The configured model: KAS_LLM_PROVIDER picks it, the built-in answerer when none is configured. */
export function createLlmProvider(config: Config, logger?: Logger): LlmProvider {
  const options = {
    baseURL: config.KAS_LLM_BASE_URL,
    apiKey: config.KAS_LLM_API_KEY,
    model: config.KAS_LLM_MODEL,
    contextWindow: config.KAS_LLM_CONTEXT_TOKENS,
    toolCalling: config.KAS_LLM_TOOL_CALLING,
  };
  switch (config.KAS_LLM_PROVIDER) {
    case 'openai':
      return withFailureLog(createOpenAiCompatibleProvider(options), config, logger);
    case 'anthropic':
      return withFailureLog(createAnthropicProvider(options), config, logger);
    default:
      return createBuiltinProvider();
  }
}

/**
 * The provider, with each failed request logged at `warn`: the endpoint, the model and the real cause
 * (a refused connection, a 401 with the provider's words), never the key. A turn stopped by its user is
 * no failure.
 */
function withFailureLog(provider: LlmProvider, config: Config, logger: Logger | undefined): LlmProvider {
  if (!logger) return provider;
  const endpoint = loggableUrl(
    config.KAS_LLM_BASE_URL ?? DEFAULT_LLM_ENDPOINTS[provider.name as keyof typeof DEFAULT_LLM_ENDPOINTS],
  );
  return {
    name: provider.name,
    defaultModel: provider.defaultModel,
    contextWindow: provider.contextWindow,
    toolCalling: provider.toolCalling,
    async *stream(request) {
      try {
        yield* provider.stream(request);
      } catch (error) {
        if (!request.signal?.aborted && !(error instanceof Error && error.name === 'AbortError'))
          logger.warn(
            {
              provider: provider.name,
              endpoint,
              model: request.model ?? provider.defaultModel,
              status: error instanceof LlmProviderError ? error.status : undefined,
              cause: causeChain(error),
            },
            'model provider request failed',
          );
        throw error;
      }
    },
  };
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
