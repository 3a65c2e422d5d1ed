import { createRequire } from 'node:module';
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import {
  type LlmMessage,
  type LlmProvider,
  LlmProviderError,
  type LlmProviderOptions,
  type LlmToolCall,
} from './llm.types.ts';

// The SDK is loaded when this provider is configured, so the default built-in answerer does not hold it
// in memory (tens of MB).
const requireModule = createRequire(import.meta.url);

function toOpenAiMessage(message: LlmMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'tool':
      return { role: 'tool', tool_call_id: message.tool_call_id, content: message.content };
    case 'assistant':
      return message.tool_calls?.length
        ? {
            role: 'assistant',
            content: message.content || null,
            tool_calls: message.tool_calls.map((c) => ({
              id: c.id,
              type: 'function' as const,
              function: { name: c.name, arguments: c.arguments },
            })),
          }
        : { role: 'assistant', content: message.content };
    default:
      return { role: message.role, content: message.content };
  }
}

export function toProviderError(error: unknown): unknown {
  if (error instanceof LlmProviderError) return error;
  if (error instanceof Error && error.name === 'AbortError') return error;
  const status = (error as { status?: number }).status;
  const message = (error as Error)?.message ?? String(error);
  return new LlmProviderError(message, {
    status: typeof status === 'number' ? status : undefined,
    cause: error,
  });
}

/** Any server speaking OpenAI chat completions: OpenAI, vLLM, Ollama, LiteLLM, llama.cpp server. */
export function createOpenAiCompatibleProvider(options: LlmProviderOptions): LlmProvider {
  const { default: OpenAIClient } = requireModule('openai') as { default: typeof OpenAI };
  const client = new OpenAIClient({
    baseURL: options.baseURL,
    apiKey: options.apiKey ?? 'not-needed',
    maxRetries: 0,
    timeout: 120_000,
  });
  const defaultModel = options.model ?? 'gpt-4o-mini';
  return {
    name: 'openai',
    defaultModel,
    toolCalling: options.toolCalling ?? true,
    contextWindow: options.contextWindow ?? 128_000,
    async *stream(request) {
      const calls = new Map<number, LlmToolCall>();
      try {
        const stream = await client.chat.completions.create(
          {
            model: request.model ?? defaultModel,
            messages: request.messages.map(toOpenAiMessage),
            stream: true,
            ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
            ...(request.max_output_tokens ? { max_tokens: request.max_output_tokens } : {}),
            ...(request.tools?.length
              ? {
                  tools: request.tools.map((t) => ({
                    type: 'function' as const,
                    function: { name: t.name, description: t.description, parameters: t.parameters },
                  })),
                  tool_choice: request.tool_choice ?? 'auto',
                }
              : {}),
          },
          { signal: request.signal },
        );
        for await (const chunk of stream) {
          const delta = chunk.choices[0]?.delta as
            | (OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string })
            | undefined;
          if (!delta) continue;
          if (delta.reasoning_content) yield { type: 'reasoning', text: delta.reasoning_content };
          if (delta.content) yield { type: 'text', text: delta.content };
          for (const part of delta.tool_calls ?? []) {
            const call = calls.get(part.index) ?? { id: '', name: '', arguments: '' };
            if (part.id) call.id = part.id;
            if (part.function?.name) call.name += part.function.name;
            if (part.function?.arguments) call.arguments += part.function.arguments;
            calls.set(part.index, call);
          }
        }
      } catch (error) {
        throw toProviderError(error);
      }
      for (const [index, call] of [...calls.entries()].sort((a, b) => a[0] - b[0])) {
        yield { type: 'tool_call', call: { ...call, id: call.id || `call_${index}` } };
      }
    },
  };
}
