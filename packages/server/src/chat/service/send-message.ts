import type { Actor } from '../../auth/roles.ts';
import { AppError } from '../../errors.ts';
import * as filesService from '../../files/files.service.ts';
import { allowedModels } from '../../llm/index.ts';
import * as projectsService from '../../projects/projects.service.ts';
import * as tokenBudgetsService from '../../token-budgets/token-budgets.service.ts';
import { type AttachedText, attachmentBudget, fitWhole } from '../attachments.ts';
import type { MessageNode, SessionRow } from '../chat.repository.ts';
import * as chatRepository from '../chat.repository.ts';
import type { ChatFullResponse, ChatStreamLine, SendMessageInput } from '../chat.schemas.ts';
import { removeRenderedCitations } from '../citations.ts';
import { loadPersona } from '../persona.ts';
import { answerReserve, tokens, tokensAtMost } from '../prompt.ts';
import { assertDocumentSetsAccessible } from '../retrieval.ts';
import { Channel } from './channel.ts';
import { withHeartbeat } from './heartbeat.ts';
import { type ChatDeps, createSessionRow, ownedSession } from './sessions.ts';
import { startRecording } from './stream-buffer.ts';
import { runTurn, type TurnPlan } from './turn.ts';
import type { TurnResult } from './turn-result.ts';
import { TurnWriter } from './turn-writer.ts';

export const PLACEHOLDER_ANSWER = 'Response was terminated prior to completion, try regenerating.';

/** What a surface may set beyond `SendMessageInput` (the OpenAI surface's `max_tokens`). */
export interface TurnOptions {
  maxOutputTokens?: number | undefined;
}

/** A turn whose rows exist and whose generation runs on its own, whoever reads the lines. */
export interface ChatRun {
  sessionId: string;
  userMessageId: number | null;
  assistantMessageId: number;
  /** When the answer was begun (its row's time). */
  startedAt: Date;
  lines: AsyncIterable<ChatStreamLine>;
  /** Settles when the model first answers; rejects when it failed before saying anything. */
  started: Promise<void>;
  /** What the turn said, once it has ended and its budget reservation is released. */
  result: Promise<TurnResult>;
  /** Settles once the turn has ended and its lines are kept for resuming. */
  done: Promise<void>;
}

/**
 * Everything that can fail with an ordinary HTTP error happens here, before the first byte: validation,
 * access to the session, agent, project, files and document sets, and token budgets. Then the user row and
 * the reserved assistant row are written and the generation starts, detached from the caller.
 */
export async function startChatTurn({
  ctx,
  actor,
  input,
  options = {},
}: {
  ctx: ChatDeps;
  actor: Actor;
  input: SendMessageInput;
  options?: TurnOptions;
}): Promise<ChatRun> {
  if (input.chat_session_id && input.chat_session_info)
    throw new AppError('BAD_REQUEST', 'Give either chat_session_id or chat_session_info, not both');
  const override = input.llm_override ?? {};
  if (override.model_provider && override.model_provider !== ctx.llm.name)
    throw new AppError(
      'INVALID_INPUT',
      `Model provider "${override.model_provider}" is not configured; this instance uses "${ctx.llm.name}"`,
    );
  const filters = input.internal_search_filters ?? {};
  // The turn's cost is reserved before anything is answered (the question and a full answer), and settled
  // (the reservation deleted) once the answer's tokens are saved, or as soon as the turn fails.
  const withinBudget = tokenBudgetsService.reserveBudget({
    ctx,
    actor,
    estimate: tokensAtMost(input.message) + answerReserve(ctx.llm.contextWindow),
  });
  withinBudget.catch(() => {});
  try {
    return await admitted();
  } catch (error) {
    await withinBudget.then(
      (reservation) => reservation.release(),
      () => {},
    );
    throw error;
  }

  async function admitted(): Promise<ChatRun> {
    let session: SessionRow;
    let created = false;
    if (input.chat_session_id) {
      // Both reads at once; a used-up budget is reported first, as when they ran one after the other.
      const [budget, owned] = await Promise.allSettled([
        withinBudget,
        ownedSession(ctx, actor, input.chat_session_id),
      ]);
      if (budget.status === 'rejected') throw budget.reason;
      if (owned.status === 'rejected') throw owned.reason;
      session = owned.value;
    } else {
      await withinBudget;
      const info = input.chat_session_info ?? { persona_id: 0 };
      session = await createSessionRow(ctx, actor, {
        persona_id: info.persona_id,
        description: info.description ?? null,
        project_id: info.project_id ?? null,
      });
      created = true;
    }
    const persona = await loadPersona({ ctx, actor, personaId: session.persona_id });
    if (filters.document_set?.length)
      await assertDocumentSetsAccessible({ ctx, actor, names: filters.document_set });
    const project =
      session.project_id !== null
        ? await projectsService.getOwnedProject({ ctx, actor, projectId: session.project_id })
        : null;
    const newFiles = await filesService.loadOwnedFiles({ ctx, actor, descriptors: input.file_descriptors });

    if (override.model_name != null)
      assertModelAllowed(ctx, actor, override.model_name, persona.llm_model_version_override);
    const model = override.model_name ?? persona.llm_model_version_override ?? ctx.llm.defaultModel;
    const temperature = override.temperature ?? undefined;

    const tree = await appendTurn(ctx, session, input, { files: newFiles, model, override });
    const files = tree.userCreated
      ? newFiles
      : await filesService.loadOwnedFiles({
          ctx,
          actor,
          descriptors: tree.userMessage.files as SendMessageInput['file_descriptors'],
        });

    const plan: TurnPlan = {
      sessionId: session.id,
      actor,
      persona,
      projectInstructions: project?.instructions ?? '',
      userMessageId: tree.userMessage.id,
      assistantMessageId: tree.assistant.id,
      startedAt: new Date(tree.assistant.time_sent),
      question: tree.userMessage.message,
      history: tree.history
        .filter((m) => m.message_type !== 'system' && m.error === null && m.message.trim())
        .map((m) => ({ role: m.message_type as 'user' | 'assistant', content: m.message })),
      // Long attachments are retrieved from (their best chunks for the question), never pasted whole.
      files: await relevantAttachments(
        ctx,
        tree.userMessage.message,
        files.map((f) => ({ name: f.descriptor.name ?? f.descriptor.id, text: f.text })),
      ),
      additionalContext: input.additional_context ?? null,
      filters,
      includeCitations: input.include_citations,
      deepResearch: input.deep_research,
      model,
      temperature,
      maxOutputTokens: options.maxOutputTokens,
    };

    const recorder = startRecording(ctx, tree.assistant.id);
    const channel = new Channel<ChatStreamLine>(recorder ? (line) => recorder.add(line) : undefined);
    recorder?.follows(session.id, channel);
    const writer = new TurnWriter(channel);
    writer.opened({
      createdSessionId: created ? session.id : null,
      userMessageId: tree.userCreated ? tree.userMessage.id : null,
      assistantMessageId: tree.assistant.id,
    });
    let markStarted!: () => void;
    let failStart!: (error: unknown) => void;
    const started = new Promise<void>((resolve, reject) => {
      markStarted = resolve;
      failStart = reject;
    });
    started.catch(() => {});
    const reservation = await withinBudget;
    const result = runTurn({
      ctx,
      plan,
      writer,
      onStarted: () => markStarted(),
      onFailedBeforeStart: failStart,
    })
      .catch((error) => {
        // A bug: the stream still ends with an error line, and the result says the turn failed.
        ctx.logger.error({ err: error }, 'chat turn crashed');
        writer.fail(new AppError('INTERNAL_ERROR', 'The answer could not be generated', { cause: error }));
      })
      .then(() => reservation.release())
      .catch((error) => ctx.logger.error({ err: error }, 'releasing a token budget reservation failed'))
      .finally(() => {
        markStarted();
        channel.close();
      })
      .then(() => writer.result);
    const done = result.then(() => recorder?.finished());
    return {
      sessionId: session.id,
      userMessageId: tree.userCreated ? tree.userMessage.id : null,
      assistantMessageId: tree.assistant.id,
      startedAt: new Date(tree.assistant.time_sent),
      lines: channel,
      started,
      result,
      done,
    };
  }
}

/** The attachments as the model reads them: whole when they fit, else their best parts, ranked in the worker pool. */
function relevantAttachments(
  ctx: ChatDeps,
  question: string,
  files: AttachedText[],
): Promise<AttachedText[]> | AttachedText[] {
  const budgetTokens = attachmentBudget(ctx.llm.contextWindow);
  if (fitWhole(files, budgetTokens)) return files;
  return ctx.cpu.run('rankAttachments', { question, files, budgetTokens }, { subject: 'the attached files' });
}

/**
 * `llm_override.model_name` picks only a model an admin allowed: the provider's default and KAS_LLM_MODELS,
 * or the agent's own model. Admins may pick any model of the configured provider.
 */
function assertModelAllowed(ctx: ChatDeps, actor: Actor, model: string, agentModel: string | null) {
  if (actor.role === 'admin' || model === agentModel) return;
  const allowed = allowedModels(ctx.config, ctx.llm);
  if (allowed.includes(model)) return;
  throw new AppError(
    'INVALID_INPUT',
    `llm_override.model_name: "${model}" is not an allowed model; allowed: ${[...allowed, ...(agentModel ? [agentModel] : [])].map((m) => `"${m}"`).join(', ')}`,
  );
}

/**
 * Waits for the turn's first line. A turn that fails before it is answered as an ordinary error, once
 * the turn has settled (its budget reservation released), so the caller never sees the error first.
 */
async function startedOrSettled(run: ChatRun): Promise<void> {
  try {
    await run.started;
  } catch (error) {
    await run.done;
    throw error;
  }
}

/**
 * A turn that has begun: its rows and its lines (with heartbeats), once the model first answered. A turn
 * that fails before that is thrown as an ordinary error.
 */
export async function beginTurn({
  ctx,
  input,
  options,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: SendMessageInput;
  options?: TurnOptions;
}): Promise<{ run: ChatRun; lines: AsyncIterable<ChatStreamLine> }> {
  const run = await startChatTurn({ ctx, actor: ctx.actor, input, ...(options ? { options } : {}) });
  await startedOrSettled(run);
  return { run, lines: withHeartbeat(run.lines, ctx.config.KAS_CHAT_HEARTBEAT_MS) };
}

/** The stream of one turn: the lines of DESIGN.md, for the NDJSON route and the tRPC procedure alike. */
export async function* streamMessage({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: SendMessageInput;
}): AsyncGenerator<ChatStreamLine> {
  const { lines } = await beginTurn({ ctx, input });
  yield* lines;
}

/** `stream: false`: the same turn, aggregated into one `ChatFullResponse`. */
export async function sendMessage({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: SendMessageInput;
}): Promise<ChatFullResponse> {
  const { actor } = ctx;
  const run = await startChatTurn({ ctx, actor, input });
  await startedOrSettled(run);
  const result = await run.result;
  if (result.failure) throw result.failure;
  const citations = Object.fromEntries(
    result.citations.map((c) => [String(c.citation_number), c.document_id]),
  );
  return {
    answer: result.answer,
    answer_citationless: removeRenderedCitations(result.answer),
    chat_message_id: run.assistantMessageId,
    message_id: run.assistantMessageId,
    user_message_id: run.userMessageId,
    chat_session_id: run.sessionId,
    context_docs: { top_documents: result.documents },
    top_documents: result.documents,
    citations,
    citation_info: result.citations.map((c) => ({ type: 'citation_info' as const, ...c })),
    pre_answer_reasoning: result.reasoning,
    tool_calls: result.toolCalls,
    error_msg: null,
  };
}

/**
 * The question's place in the session's tree and the turn's rows: the parent is the root (`null`), the
 * mainline's last message (`-1`) or a message of the session; a parent that is a question is regenerated
 * (its text is kept, the new one ignored). The history is the path from the root to the question.
 */
async function appendTurn(
  ctx: ChatDeps,
  session: SessionRow,
  input: SendMessageInput,
  turn: {
    files: Awaited<ReturnType<typeof filesService.loadOwnedFiles>>;
    model: string;
    override: NonNullable<SendMessageInput['llm_override']>;
  },
) {
  // The path from the root to the parent; none for a turn at the root (made with the turn when the
  // session has none yet), whose history is empty.
  let path: MessageNode[] = [];
  if (input.parent_message_id === -1)
    path = await chatRepository.walkMessages(ctx.db, session.id, 'root', 'down');
  else if (input.parent_message_id !== null) {
    path = await chatRepository.walkMessages(ctx.db, session.id, input.parent_message_id, 'up');
    if (!path.length)
      throw new AppError(
        'INVALID_INPUT',
        `parent_message_id ${input.parent_message_id} is not a message of chat session ${session.id}`,
      );
  }
  const parent = path.at(-1);
  const regenerate = parent?.message_type === 'user';
  if (!regenerate && !input.message.trim()) throw new AppError('INVALID_INPUT', 'message must not be empty');
  const question = regenerate ? parent.message : input.message;
  const written = await chatRepository.appendTurn(ctx.db, {
    sessionId: session.id,
    parentId: parent?.id ?? 'root',
    question: regenerate
      ? null
      : {
          message: input.message,
          token_count: tokens(input.message),
          files: turn.files.map((f) => f.descriptor),
        },
    answer: { message: PLACEHOLDER_ANSWER, model_name: turn.model },
    session: {
      description: question.slice(0, 80),
      alternate_model: turn.override.model_name ?? null,
      temperature: turn.override.temperature ?? null,
    },
  });
  return {
    // A regenerated answer's question is its parent.
    userMessage: written.question ?? parent!,
    userCreated: !regenerate,
    assistant: written.answer,
    history: regenerate ? path.slice(0, -1) : path,
  };
}
