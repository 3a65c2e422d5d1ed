import { createRequire } from 'node:module';
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { LlmMessage, LlmProvider, LlmProviderOptions, LlmToolCall } from './llm.types.ts';
import { toProviderError } from './openai-compatible.ts';

// The SDK is loaded when this provider is configured, so the default built-in answerer does not hold it
// in memory (tens of MB).
const requireModule = createRequire(import.meta.url);

type Block = Exclude<MessageParam['content'], string>[number];

/** Anthropic wants alternating roles, tool results inside user turns and one system string. */
function toAnthropic(messages: LlmMessage[]): { system: string; messages: MessageParam[] } {
  const system: string[] = [];
  const out: Array<{ role: 'user' | 'assistant'; content: Block[] }> = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    const last = out.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system') system.push(m.content);
    else if (m.role === 'user') push('user', [{ type: 'text', text: m.content }]);
    else if (m.role === 'tool')
      push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content }]);
    else {
      const blocks: Block[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const call of m.tool_calls ?? []) {
        let input: unknown = {};
        try {
          input = JSON.parse(call.arguments || '{}');
        } catch {}
        blocks.push({ type: 'tool_use', id: call.id, name: call.name, input });
      }
      if (blocks.length) push('assistant', blocks);
    }
  }
  return { system: system.join('\n\n'), messages: out };
}

/** Anthropic Messages API with streaming and tool use. */
export function createAnthropicProvider(options: LlmProviderOptions): LlmProvider {
  const { default: AnthropicClient } = requireModule('@anthropic-ai/sdk') as { default: typeof Anthropic };
  const client = new AnthropicClient({
    baseURL: options.baseURL,
    apiKey: options.apiKey ?? 'not-needed',
    maxRetries: 0,
    timeout: 120_000,
  });
  const defaultModel = options.model ?? 'claude-sonnet-4-5';
  return {
    name: 'anthropic',
    defaultModel,
    toolCalling: options.toolCalling ?? true,
    contextWindow: options.contextWindow ?? 200_000,
    async *stream(request) {
      const { system, messages } = toAnthropic(request.messages);
      const pending = new Map<number, LlmToolCall>();
      const done: LlmToolCall[] = [];
      try {
        const stream = await client.messages.create(
          {
            model: request.model ?? defaultModel,
            max_tokens: request.max_output_tokens ?? 4096,
            messages,
            stream: true,
            ...(system ? { system } : {}),
            ...(request.temperature !== undefined ? { temperature: Math.min(1, request.temperature) } : {}),
            ...(request.tools?.length && request.tool_choice !== 'none'
              ? {
                  tools: request.tools.map((t) => ({
                    name: t.name,
                    description: t.description,
                    input_schema: t.parameters as Anthropic.Messages.Tool.InputSchema,
                  })),
                }
              : {}),
          },
          { signal: request.signal },
        );
        for await (const event of stream) {
          if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
            pending.set(event.index, {
              id: event.content_block.id,
              name: event.content_block.name,
              arguments: '',
            });
          } else if (event.type === 'content_block_delta') {
            if (event.delta.type === 'text_delta') yield { type: 'text', text: event.delta.text };
            else if (event.delta.type === 'thinking_delta')
              yield { type: 'reasoning', text: event.delta.thinking };
            else if (event.delta.type === 'input_json_delta') {
              const call = pending.get(event.index);
              if (call) call.arguments += event.delta.partial_json;
            }
          } else if (event.type === 'content_block_stop') {
            const call = pending.get(event.index);
            if (call) {
              pending.delete(event.index);
              done.push(call);
            }
          }
        }
      } catch (error) {
        throw toProviderError(error);
      }
      for (const call of done)
        yield { type: 'tool_call', call: { ...call, arguments: call.arguments || '{}' } };
    },
  };
}
