import { z } from 'zod';

/** A message part as OpenAI's clients send them; only text parts are read. */
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

export const ChatCompletionMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(ContentPart), z.null()]).optional(),
  name: z.string().optional(),
});
export type ChatCompletionMessage = z.infer<typeof ChatCompletionMessage>;

/**
 * `POST /v1/chat/completions` as OpenAI's clients send it. Fields kas does not use (`n`, `top_p`, `tools`,
 * `response_format`, …) are accepted and ignored, as the clients send some of them by default.
 */
export const ChatCompletionInput = z.looseObject({
  model: z.string().min(1).max(200),
  messages: z.array(ChatCompletionMessage).min(1).max(1000),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
  max_completion_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
  user: z.string().max(512).nullable().optional(),
  store: z.boolean().nullable().optional(),
});
export type ChatCompletionInput = z.infer<typeof ChatCompletionInput>;

/** OpenAI's `url_citation` annotation: a cited document and the marker's place in the content. */
export interface UrlCitation {
  type: 'url_citation';
  url_citation: { url: string; title: string; start_index: number; end_index: number };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: {
      role: 'assistant';
      content: string;
      refusal: null;
      annotations: UrlCitation[];
      reasoning_content?: string;
    };
    finish_reason: 'stop' | 'length';
    logprobs: null;
  }>;
  /** The cited URLs in citation-number order (the convention of search-backed OpenAI-compatible APIs). */
  citations: string[];
  usage: Usage;
  /** The kas chat session the exchange is saved in (absent with `store: false`). */
  chat_session_id?: string;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    delta: {
      role?: 'assistant';
      content?: string;
      reasoning_content?: string;
      annotations?: UrlCitation[];
    };
    finish_reason: 'stop' | 'length' | null;
    logprobs: null;
  }>;
  citations?: string[];
  usage?: Usage | null;
}

export interface Model {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  name: string;
  description: string;
}

export interface ModelList {
  object: 'list';
  data: Model[];
}
