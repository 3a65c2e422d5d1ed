import type { Actor } from '../auth/roles.ts';
import type { ChatStreamLine, SearchDoc } from '../chat/chat.schemas.ts';
import { SendMessageInput } from '../chat/chat.schemas.ts';
import * as chatService from '../chat/chat.service.ts';
import { plainMarkers } from '../chat/citations.ts';
import { tokens } from '../chat/prompt.ts';
import type { ChatDeps } from '../chat/service/sessions.ts';
import { AppError } from '../errors.ts';
import * as personasService from '../personas/personas.service.ts';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionInput,
  ChatCompletionMessage,
  Model,
  ModelList,
  UrlCitation,
  Usage,
} from './openai.schemas.ts';

export type OpenAiDeps = ChatDeps & { actor: Actor };

/** The model id that names the default agent. */
export const DEFAULT_MODEL = 'kas';
const AGENT_MODEL = /^agent-(\d{1,9})$/;

export function modelId(personaId: number): string {
  return `agent-${personaId}`;
}

/** The agent a model id names; 404 (`PERSONA_NOT_FOUND`) for anything else. */
export function personaOfModel(model: string): number {
  if (model === DEFAULT_MODEL) return 0;
  const match = AGENT_MODEL.exec(model);
  if (!match) throw modelNotFound(model);
  return Number(match[1]);
}

function modelNotFound(model: string): AppError {
  return new AppError(
    'PERSONA_NOT_FOUND',
    `The model "${model}" does not exist: models are "kas" (the default agent) and "agent-{id}" (GET /v1/models lists them)`,
  );
}

/** One model per agent the caller may use (`agent-{id}`), and `kas` for the default agent. */
export async function listModels({ ctx }: { ctx: OpenAiDeps }): Promise<ModelList> {
  const page = await personasService.listPersonas({
    ctx,
    input: {
      page_num: 0,
      page_size: 1000,
      include_deleted: false,
      get_editable: false,
      include_default: true,
    },
  });
  const models = page.items.map((p) => ({
    id: modelId(p.id),
    object: 'model' as const,
    created: 0,
    owned_by: 'kas',
    name: p.name,
    description: p.description,
  }));
  const fallback = page.items.find((p) => p.id === 0);
  if (fallback) models.unshift({ ...models.find((m) => m.id === modelId(0))!, id: DEFAULT_MODEL });
  return { object: 'list', data: models };
}

/** One model of `listModels`; 404 when the caller has no such model. */
export async function getModel({ ctx, id }: { ctx: OpenAiDeps; id: string }): Promise<Model> {
  const found = (await listModels({ ctx })).data.find((m) => m.id === id);
  if (!found) throw modelNotFound(id);
  return found;
}

function textOf(message: ChatCompletionMessage): string {
  const { content } = message;
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content
    .map((part) => (part.type === 'text' || part.type === 'input_text' ? (part.text ?? '') : ''))
    .filter(Boolean)
    .join('\n');
}

/** A completion that has begun: the turn's lines, and what its answer is read against. */
export interface Completion {
  id: string;
  created: number;
  model: string;
  chatSessionId: string | null;
  lines: AsyncIterable<ChatStreamLine>;
  /** What the turn said, when it runs here; a resumed completion has only its kept lines. */
  result: Promise<chatService.TurnResult> | null;
  promptTokens: number;
  includeUsage: boolean;
}

/**
 * Starts the chat turn a completion request asks for: the last user message is the question, the ones
 * before it the conversation (saved as a new session of the caller, so it shows in their history), system
 * and developer messages the additional context. The agent's prompts, document sets and actions apply as
 * in every other chat. With `store: false` the session is deleted once the turn has ended.
 */
export async function startCompletion({
  ctx,
  input,
}: {
  ctx: OpenAiDeps;
  input: ChatCompletionInput;
}): Promise<Completion> {
  const personaId = personaOfModel(input.model);
  const lastUser = input.messages.findLastIndex((m) => m.role === 'user');
  const question = lastUser === -1 ? '' : textOf(input.messages[lastUser]!);
  if (!question.trim())
    throw new AppError('INVALID_INPUT', 'messages: the last user message (the question) must have text');
  const conversation = input.messages.slice(0, lastUser);
  const system = conversation
    .concat(input.messages.slice(lastUser + 1))
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map(textOf)
    .filter((t) => t.trim());
  const earlier = conversation.flatMap((m) =>
    m.role === 'user' || m.role === 'assistant' ? [{ role: m.role, content: textOf(m) }] : [],
  );
  const sessionId = await chatService.seedSession({
    ctx,
    personaId,
    description: null,
    messages: earlier,
  });
  const maxOutputTokens = input.max_completion_tokens ?? input.max_tokens ?? undefined;
  const started = chatService.beginTurn({
    ctx,
    input: SendMessageInput.parse({
      message: question,
      chat_session_id: sessionId,
      parent_message_id: -1,
      additional_context: system.length ? system.join('\n\n') : null,
      ...(input.temperature != null ? { llm_override: { temperature: input.temperature } } : {}),
    }),
    options: { maxOutputTokens },
  });
  const forget = () =>
    chatService
      .deleteSession({ ctx, input: { session_id: sessionId, hard_delete: true } })
      .catch((error) => ctx.logger.error({ err: error }, 'deleting an unsaved completion failed'));
  let begun: Awaited<typeof started>;
  try {
    begun = await started;
  } catch (error) {
    if (input.store === false) await forget();
    throw error;
  }
  if (input.store === false) void begun.run.done.then(forget);
  return {
    id: `${COMPLETION_PREFIX}${begun.run.assistantMessageId}`,
    created: Math.floor(begun.run.startedAt.getTime() / 1000),
    model: input.model,
    chatSessionId: input.store === false ? null : sessionId,
    lines: begun.lines,
    result: begun.run.result,
    promptTokens: input.messages.reduce((sum, m) => sum + tokens(textOf(m)), 0),
    includeUsage: input.stream_options?.include_usage === true,
  };
}

const COMPLETION_PREFIX = 'chatcmpl-';

/**
 * A completion again, from its first line, following its live run: the same chunks as the first time
 * (the model is named by the session's agent). 404 unless the caller's and still kept.
 */
export async function resumeCompletion({
  ctx,
  completionId,
  includeUsage,
}: {
  ctx: OpenAiDeps;
  completionId: string;
  includeUsage: boolean;
}): Promise<Completion> {
  const messageId = completionId.startsWith(COMPLETION_PREFIX)
    ? Number(completionId.slice(COMPLETION_PREFIX.length))
    : Number.NaN;
  if (!Number.isSafeInteger(messageId) || messageId < 1 || messageId > 2 ** 31 - 1)
    throw new AppError('NOT_FOUND', `No completion ${JSON.stringify(completionId)}`);
  const answer = await chatService.resumeAnswer({ ctx, messageId });
  return {
    id: completionId,
    created: Math.floor(answer.startedAt.getTime() / 1000),
    model: answer.personaId === 0 ? DEFAULT_MODEL : modelId(answer.personaId),
    chatSessionId: answer.sessionId,
    lines: answer.lines,
    result: null,
    promptTokens: 0,
    includeUsage,
  };
}

type Marker = { citation_number: number; start: number; end: number };

/** The answer as a client reads it (plain `[n]` markers), piece by piece as streamed, its markers recorded. */
class PlainAnswer {
  text = '';
  readonly markers: Marker[] = [];

  /** A piece of the answer (rendered markers) as the client reads it. */
  add(rendered: string): string {
    const piece = plainMarkers(rendered);
    for (const marker of piece.markers)
      this.markers.push({
        citation_number: marker.citation_number,
        start: this.text.length + marker.start,
        end: this.text.length + marker.end,
      });
    this.text += piece.text;
    return piece.text;
  }
}

/**
 * A finished answer's citations in both conventions, from its markers and the turn's documents: a document
 * is reported as cited after the marker that cites it.
 */
function citationsOf(
  result: chatService.TurnResult,
  markers: Marker[],
): { annotations: UrlCitation[]; citations: string[] } {
  const { citations: cited, searched } = result;
  const documentOf = (n: number) => {
    const id = cited.find((c) => c.citation_number === n)?.document_id;
    return id === undefined ? undefined : searched.get(id);
  };
  const annotations = markers.flatMap((marker): UrlCitation[] => {
    const doc = documentOf(marker.citation_number);
    if (!doc) return [];
    return [
      {
        type: 'url_citation',
        url_citation: {
          url: urlOf(doc),
          title: doc.semantic_identifier || doc.document_id,
          start_index: marker.start,
          end_index: marker.end,
        },
      },
    ];
  });
  const citations = [...cited]
    .sort((a, b) => a.citation_number - b.citation_number)
    .map((c) => {
      const doc = searched.get(c.document_id);
      return doc ? urlOf(doc) : c.document_id;
    });
  return { annotations, citations };
}

/** A document's address for a client: its link, else a URN naming it in kas. */
function urlOf(doc: SearchDoc): string {
  return doc.link ?? `urn:kas:document:${encodeURIComponent(doc.document_id)}`;
}

function usageOf(completion: Completion, answer: string): Usage {
  const completionTokens = tokens(answer);
  return {
    prompt_tokens: completion.promptTokens,
    completion_tokens: completionTokens,
    total_tokens: completion.promptTokens + completionTokens,
  };
}

/** What a completion's turn said: the running turn's result, or a resumed one's kept lines folded. */
async function resultOf(completion: Completion): Promise<chatService.TurnResult> {
  if (completion.result) return completion.result;
  const fold = new chatService.TurnFold();
  for await (const line of completion.lines) fold.add(line);
  return fold.result;
}

/** `stream: false`: the whole answer as one `chat.completion`. */
export async function completeChat({ completion }: { completion: Completion }): Promise<ChatCompletion> {
  const result = await resultOf(completion);
  if (result.failure) throw result.failure;
  const answer = new PlainAnswer();
  answer.add(result.answer);
  const { annotations, citations } = citationsOf(result, answer.markers);
  return {
    id: completion.id,
    object: 'chat.completion',
    created: completion.created,
    model: completion.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.text,
          refusal: null,
          annotations,
          ...(result.reasoning ? { reasoning_content: result.reasoning } : {}),
        },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    citations,
    usage: usageOf(completion, answer.text),
    ...(completion.chatSessionId ? { chat_session_id: completion.chatSessionId } : {}),
  };
}

/**
 * `stream: true`: the answer as `chat.completion.chunk`s, `null` where the turn sent a heartbeat. The last
 * chunk carries the annotations, the citations and (if asked) the usage. A turn that failed after it began
 * throws its error once the chunks before it are out.
 */
export async function* streamChat({
  completion,
}: {
  completion: Completion;
}): AsyncGenerator<ChatCompletionChunk | null> {
  const fold = new chatService.TurnFold();
  const answer = new PlainAnswer();
  const chunk = (
    delta: ChatCompletionChunk['choices'][0]['delta'],
    extra: Partial<ChatCompletionChunk> = {},
    finish: 'stop' | null = null,
  ): ChatCompletionChunk => ({
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(completion.includeUsage ? { usage: null } : {}),
    ...extra,
  });
  yield chunk({ role: 'assistant', content: '' });
  for await (const line of completion.lines) {
    if ('obj' in line && line.obj.type === 'chat_heartbeat') {
      yield null;
      continue;
    }
    fold.add(line);
    if (!('obj' in line)) continue;
    if (line.obj.type === 'message_delta') {
      const text = answer.add(line.obj.content);
      if (text) yield chunk({ content: text });
    } else if (line.obj.type === 'reasoning_delta') yield chunk({ reasoning_content: line.obj.reasoning });
  }
  const { failure } = fold.result;
  if (failure) throw failure;
  const { annotations, citations } = citationsOf(fold.result, answer.markers);
  yield chunk(
    { ...(annotations.length ? { annotations } : {}) },
    {
      citations,
      ...(completion.includeUsage ? { usage: usageOf(completion, answer.text) } : {}),
    },
    'stop',
  );
}
