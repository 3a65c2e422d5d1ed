import { isRetryableStatus } from '../errors.ts';
/** A tool call the model asked for; `arguments` is the raw JSON text. */
export interface LlmToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: LlmToolCall[] }
  | { role: 'tool'; tool_call_id: string; name: string; content: string };

export interface LlmTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/**
 * Text the answer may draw on, also present inside `messages` for real models. The built-in answerer,
 * which cannot read a prompt, answers from these.
 */
export interface LlmSource {
  /** The `[n]` the answer cites; null for attached files, which are not cited. */
  citation_number: number | null;
  title: string;
  content: string;
}

export interface LlmRequest {
  messages: LlmMessage[];
  tools?: LlmTool[];
  /** `none` on the last cycle of a turn so the model must answer. */
  tool_choice?: 'auto' | 'none';
  model?: string;
  temperature?: number;
  max_output_tokens?: number;
  signal?: AbortSignal;
  /** What the call is for; real models read it from the prompt, the built-in answerer from here. */
  purpose?: 'answer' | 'plan' | 'name';
  /** The current question, unwrapped from the prompt. */
  question?: string;
  sources?: LlmSource[];
}

export type LlmEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call'; call: LlmToolCall };

/** How a configured provider is reached (from KAS_LLM_BASE_URL, _API_KEY, _MODEL, _CONTEXT_TOKENS). */
export interface LlmProviderOptions {
  baseURL?: string | undefined;
  apiKey?: string | undefined;
  model?: string | undefined;
  contextWindow?: number | undefined;
  /** Whether the model behind the endpoint calls tools (default true). */
  toolCalling?: boolean | undefined;
}

/** One interface for every model behind the chat. */
export interface LlmProvider {
  /** `builtin`, `openai` or `anthropic`: what `llm_override.model_provider` must name. */
  readonly name: string;
  readonly defaultModel: string;
  /** Tokens the model accepts, prompt and answer together. */
  readonly contextWindow: number;
  /**
   * Whether the provider calls the tools it is offered. Without it, agents search with the question before
   * the model answers (unless told otherwise) and actions are listed to it, never run.
   */
  readonly toolCalling: boolean;
  stream(request: LlmRequest): AsyncIterable<LlmEvent>;
}

/** A failure of the model provider; `retryable` tells the client whether trying again may help. */
export class LlmProviderError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;

  constructor(message: string, options: { status?: number; retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'LlmProviderError';
    this.status = options.status;
    this.retryable = options.retryable ?? (options.status === undefined || isRetryableStatus(options.status));
  }
}
