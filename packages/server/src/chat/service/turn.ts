import { type AgentTool, agentTools, resultForModel } from '../../actions/actions.service.ts';
import type { Actor } from '../../auth/roles.ts';
import { AppError, toErrorResponse } from '../../errors.ts';
import { keywords } from '../../llm/builtin.ts';
import {
  type LlmMessage,
  LlmProviderError,
  type LlmRequest,
  type LlmSource,
  type LlmToolCall,
} from '../../llm/llm.types.ts';
import type { SearchMode } from '../../personas/personas.schemas.ts';
import { chunkKey } from '../../search/search-index.ts';
import * as chatRepository from '../chat.repository.ts';
import type { SearchDoc, SearchFilters } from '../chat.schemas.ts';
import { type CitableDocument, CitationProcessor } from '../citations.ts';
import type { ChatPersona } from '../persona.ts';
import {
  type AttachedText,
  buildMessages,
  SEARCH_TOOL_DESCRIPTION,
  searchResultJson,
  tokens,
} from '../prompt.ts';
import {
  MAX_CHUNKS,
  type RetrievalFilters,
  type RetrievedChunk,
  rankDocuments,
  retrieve,
  toSearchDoc,
} from '../retrieval.ts';
import { SHUTDOWN_STOP } from '../stop-registry.ts';
import type { ChatDeps } from './sessions.ts';
import type { TurnWriter } from './turn-writer.ts';

export interface TurnPlan {
  sessionId: string;
  actor: Actor;
  persona: ChatPersona;
  projectInstructions: string;
  userMessageId: number;
  assistantMessageId: number;
  startedAt: Date;
  question: string;
  history: Array<{ role: 'user' | 'assistant'; content: string }>;
  files: AttachedText[];
  additionalContext: string | null;
  filters: SearchFilters;
  includeCitations: boolean;
  deepResearch: boolean;
  model: string;
  temperature: number | undefined;
  maxOutputTokens: number | undefined;
}

const STOPPED_SUFFIX = ' ... \n\nGeneration was stopped by the user.';
const STOPPED_EMPTY = 'The generation was stopped by the user.';
const SHUTDOWN_SUFFIX = ' ... \n\nGeneration was cut short: the server was shutting down.';
const SHUTDOWN_EMPTY = 'The generation was cut short: the server was shutting down.';

const SEARCH_TOOL = {
  name: 'internal_search',
  description: SEARCH_TOOL_DESCRIPTION,
  parameters: {
    type: 'object',
    properties: {
      queries: { type: 'array', items: { type: 'string' }, description: 'One or more search queries' },
    },
    required: ['queries'],
  },
};

class Stopped extends Error {}

interface DocEntry {
  number: number;
  doc: SearchDoc;
  chunks: RetrievedChunk[];
}

/**
 * One assistant answer: the agent loop (or deep research), written through the turn's writer (which places
 * the packets and keeps the result) and saved at the end, whether it completed, was stopped or failed. It
 * never depends on a reader.
 */
export async function runTurn({
  ctx,
  plan,
  writer: out,
  onStarted,
  onFailedBeforeStart,
}: {
  ctx: ChatDeps;
  plan: TurnPlan;
  writer: TurnWriter;
  onStarted(): void;
  onFailedBeforeStart(error: AppError): void;
}): Promise<void> {
  const stop = ctx.stopRegistry.register(plan.sessionId, plan.startedAt);
  const began = performance.now();
  let started = false;
  let searched = false;
  const docs = new Map<string, DocEntry>();
  const byNumber = new Map<number, CitableDocument>();
  const sources: LlmSource[] = [];
  const toolMessages: LlmMessage[] = [];
  const toolCalls: Array<{
    tool_name: string;
    tool_id: number | null;
    tool_arguments: unknown;
    response: unknown;
  }> = [];
  let actionTools: AgentTool[] = [];
  let toolNotes: string[] = [];
  const processor = new CitationProcessor(byNumber, plan.includeCitations);
  const markStarted = () => {
    if (!started) {
      started = true;
      onStarted();
    }
  };
  const checkStop = () => {
    if (stop.signal.aborted) throw new Stopped();
  };
  const allDocs = () => [...docs.values()].sort((a, b) => a.number - b.number).map((d) => d.doc);
  const onText = (text: string) => {
    out.startAnswer(docs.size ? allDocs() : null, Math.round(performance.now() - began) / 1000);
    out.answer(processor.push(text));
  };

  const search = async (queries: string[]): Promise<string> => {
    searched = true;
    out.searchStarted(queries);
    const filters = retrievalFilters(plan);
    const results = await Promise.all(
      queries.map((query) => retrieve({ ctx, actor: plan.actor, query, filters, limit: MAX_CHUNKS })),
    );
    checkStop();
    const merged = new Map<string, RetrievedChunk>();
    for (const chunk of results.flat()) {
      const key = chunkKey(chunk);
      const seen = merged.get(key);
      if (!seen || (chunk.score ?? 0) > (seen.score ?? 0)) merged.set(key, chunk);
    }
    const chunks = [...merged.values()].sort((a, b) => (b.score ?? 0) - (a.score ?? 0)).slice(0, MAX_CHUNKS);
    // Documents are numbered in their ranked order, so citation [1] is the most relevant one.
    const found: DocEntry[] = [];
    for (const ranked of rankDocuments(queries, chunks)) {
      const best = ranked.chunks[0]!;
      let entry = docs.get(ranked.document_id);
      if (!entry) {
        entry = { number: docs.size + 1, doc: toSearchDoc(best), chunks: [] };
        docs.set(ranked.document_id, entry);
        byNumber.set(entry.number, { document_id: ranked.document_id, link: best.link });
      }
      for (const chunk of ranked.chunks)
        if (!entry.chunks.some((c) => c.chunk_id === chunk.chunk_id)) entry.chunks.push(chunk);
      found.push(entry);
    }
    out.searchFound(found.map((e) => e.doc));
    const view = found.map((e) => ({
      number: e.number,
      title: e.doc.semantic_identifier,
      link: e.doc.link,
      updated_at: e.doc.updated_at,
      source_type: e.doc.source_type,
      content: e.chunks
        .sort((a, b) => a.chunk_id - b.chunk_id)
        .map((c) => c.content)
        .join('\n'),
    }));
    for (const v of view) {
      const existing = sources.findIndex((s) => s.citation_number === v.number);
      const source = { citation_number: v.number, title: v.title, content: v.content };
      if (existing === -1) sources.push(source);
      else sources[existing] = source;
    }
    sources.sort((a, b) => (a.citation_number ?? 0) - (b.citation_number ?? 0));
    return searchResultJson(view, Math.floor(ctx.llm.contextWindow / 2));
  };

  const withNotes = (messages: LlmMessage[]): LlmMessage[] => {
    const first = messages[0];
    if (!toolNotes.length || first?.role !== 'system') return messages;
    return [{ role: 'system', content: `${first.content}\n\n${toolNotes.join('\n')}` }, ...messages.slice(1)];
  };

  const callAction = async (tool: AgentTool, call: LlmToolCall): Promise<string> => {
    let args: Record<string, unknown> = {};
    let badArgs: string | null = null;
    try {
      const parsed: unknown = JSON.parse(call.arguments || '{}');
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        args = parsed as Record<string, unknown>;
      else badArgs = 'The arguments must be a JSON object';
    } catch {
      badArgs = 'The arguments are not valid JSON';
    }
    out.actionStarted(tool, args);
    const timeout = AbortSignal.timeout(ctx.config.KAS_ACTION_TIMEOUT_MS);
    const result = badArgs
      ? {
          response_type: 'text' as const,
          data: null,
          error: { is_auth_error: false, status_code: null, message: badArgs },
        }
      : await tool.call(args, AbortSignal.any([stop.signal, timeout]));
    checkStop();
    out.actionDone({
      tool_name: tool.name,
      tool_id: tool.tool_id,
      response_type: result.response_type,
      data: result.data,
      file_ids: [],
      error: result.error,
    });
    toolCalls.push({
      tool_name: tool.name,
      tool_id: tool.tool_id,
      tool_arguments: args,
      response: result.error ? { error: result.error } : result.data,
    });
    return resultForModel(result);
  };

  const request = (extra: Partial<LlmRequest>): LlmRequest => ({
    messages: withNotes(
      buildMessages({
        persona: plan.persona,
        projectInstructions: plan.projectInstructions,
        history: plan.history,
        question: plan.question,
        files: plan.files,
        additionalContext: plan.additionalContext,
        toolMessages,
        searched,
        now: new Date(),
        contextWindow: ctx.llm.contextWindow,
      }),
    ),
    model: plan.model,
    ...(plan.temperature !== undefined ? { temperature: plan.temperature } : {}),
    ...(plan.maxOutputTokens !== undefined ? { max_output_tokens: plan.maxOutputTokens } : {}),
    signal: stop.signal,
    purpose: 'answer',
    question: plan.question,
    sources: [
      ...sources,
      ...plan.files.map((f) => ({ citation_number: null, title: f.name, content: f.text })),
    ],
    ...extra,
  });

  const callModel = async (req: LlmRequest, onEvent: { text(t: string): void }): Promise<LlmToolCall[]> => {
    const calls: LlmToolCall[] = [];
    for await (const event of ctx.llm.stream(req)) {
      markStarted();
      checkStop();
      if (event.type === 'text') onEvent.text(event.text);
      else if (event.type === 'reasoning') out.reason(event.text);
      else calls.push(event.call);
    }
    markStarted();
    checkStop();
    return calls;
  };

  try {
    if (plan.deepResearch) {
      await deepResearch();
    } else {
      const loaded = await agentTools({ ctx, actor: plan.actor, toolIds: plan.persona.action_tool_ids });
      actionTools = loaded.tools;
      toolNotes = loaded.notes;
      const maxCycles = ctx.config.KAS_CHAT_MAX_TOOL_CYCLES;
      const mode = searchMode(plan.persona, ctx.llm.toolCalling);
      if (mode === 'always_first') {
        // The turn's first section: a failure from here on is a line of the stream, as after the model's.
        markStarted();
        const call: LlmToolCall = {
          id: 'search_first',
          name: SEARCH_TOOL.name,
          arguments: JSON.stringify({ queries: [plan.question] }),
        };
        const content = await search([plan.question]);
        toolMessages.push({ role: 'assistant', content: '', tool_calls: [call] });
        toolMessages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content });
      }
      // A model without tool calling is offered no tool: actions are listed to it, never run.
      const callable = ctx.llm.toolCalling ? actionTools : [];
      for (let cycle = 0; cycle < maxCycles; cycle++) {
        const last = cycle === maxCycles - 1;
        const offered = ctx.llm.toolCalling
          ? [
              ...(mode !== 'never' ? [SEARCH_TOOL] : []),
              ...actionTools.map((t) => ({
                name: t.name,
                description: t.description,
                parameters: t.parameters,
              })),
            ]
          : [];
        const tools = !last && offered.length ? offered : undefined;
        const calls = await callModel(request({ tools, tool_choice: last ? 'none' : 'auto' }), {
          text: onText,
        });
        if (!calls.length) break;
        toolMessages.push({ role: 'assistant', content: '', tool_calls: calls });
        for (const call of calls) {
          const action = callable.find((t) => t.name === call.name);
          const content =
            call.name === SEARCH_TOOL.name
              ? await search(queriesOf(call, plan.question))
              : action
                ? await callAction(action, call)
                : JSON.stringify({ error: `Unknown tool ${call.name}` });
          toolMessages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content });
        }
      }
      if (!ctx.llm.toolCalling) {
        const needed = actionsNeeded(plan.question, actionTools);
        if (needed.length) {
          if (!out.answering) onText('');
          out.answer(processor.flush());
          onText(
            `\n\nThis question looks like it needs ${needed.map((n) => `\`${n}\``).join(', ')}, an action this agent has, but the built-in answerer cannot call actions: configure a tool-calling model (KAS_LLM_PROVIDER) to use them.`,
          );
        }
      }
    }
    out.closeReasoning();
    out.answer(processor.flush());
    if (!out.answering) onText('');
    await save({ message: out.result.answer, error: null });
    out.stop(null);
  } catch (error) {
    if (stop.signal.aborted) {
      out.answer(processor.flush());
      const answer = out.result.answer;
      const shutdown = stop.signal.reason === SHUTDOWN_STOP;
      await save({
        message: shutdown
          ? answer
            ? answer + SHUTDOWN_SUFFIX
            : SHUTDOWN_EMPTY
          : answer
            ? answer + STOPPED_SUFFIX
            : STOPPED_EMPTY,
        error: null,
      });
      out.stop(shutdown ? 'shutdown' : 'user_cancelled');
    } else {
      const failure = failureOf(error);
      if (failure.error_code === 'INTERNAL_ERROR') ctx.logger.error({ err: error }, 'chat generation failed');
      await save({ message: out.result.answer, error: failure.detail }).catch((e) =>
        ctx.logger.error({ err: e }, 'saving a failed answer failed'),
      );
      if (!started) onFailedBeforeStart(failure);
      out.fail(failure);
    }
  } finally {
    stop.release();
  }

  async function save(result: { message: string; error: string | null }) {
    await chatRepository.completeMessage(ctx.db, plan.assistantMessageId, {
      message: result.message,
      token_count: tokens(result.message),
      citations: Object.fromEntries([...processor.cited].map(([n, id]) => [String(n), id])),
      context_docs: allDocs(),
      reasoning: out.result.reasoning || null,
      error: result.error,
      tool_calls: toolCalls,
    });
  }

  async function deepResearch() {
    const reason = (text: string) => out.reason(text);
    const closeReasoning = () => out.closeReasoning();
    reason('Planning the research.\n');
    let planText = '';
    await callModel(
      request({
        purpose: 'plan',
        tools: undefined,
        messages: [
          {
            role: 'system',
            content:
              'Break the user question into at most three focused sub-questions that together answer it. ' +
              'Reply with one sub-question per line and nothing else.',
          },
          { role: 'user', content: plan.question },
        ],
      }),
      { text: (t) => (planText += t) },
    );
    const subQuestions = planText
      .split('\n')
      .map((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, '').trim())
      .filter(Boolean)
      .slice(0, 4);
    if (!subQuestions.length) subQuestions.push(plan.question);
    reason(`Plan:\n${subQuestions.map((q, i) => `${i + 1}. ${q}`).join('\n')}\n`);
    closeReasoning();
    for (const [i, q] of subQuestions.entries()) {
      checkStop();
      reason(`Researching ${i + 1}/${subQuestions.length}: ${q}\n`);
      closeReasoning();
      const call: LlmToolCall = {
        id: `research_${i + 1}`,
        name: SEARCH_TOOL.name,
        arguments: JSON.stringify({ queries: [q] }),
      };
      const content = await search([q]);
      toolMessages.push({ role: 'assistant', content: '', tool_calls: [call] });
      toolMessages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content });
    }
    reason(`Writing a report from ${docs.size} document${docs.size === 1 ? '' : 's'}.\n`);
    closeReasoning();
    await callModel(request({ tool_choice: 'none' }), { text: onText });
  }
}

/** When the turn searches: the agent's setting, else first when the model cannot ask; never without the search tool. */
function searchMode(persona: ChatPersona, toolCalling: boolean): SearchMode {
  if (!persona.search_enabled) return 'never';
  return persona.search_mode ?? (toolCalling ? 'when_asked' : 'always_first');
}

/** The actions whose names or summaries share a content word with the question. */
function actionsNeeded(question: string, tools: AgentTool[]): string[] {
  const asked = new Set(keywords(question));
  return tools
    .filter((t) =>
      keywords(
        `${t.name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]/g, ' ')} ${t.description.split(' (')[0]}`,
      ).some((w) => asked.has(w)),
    )
    .map((t) => t.name);
}

function queriesOf(call: LlmToolCall, fallback: string): string[] {
  try {
    const args = JSON.parse(call.arguments || '{}') as { queries?: unknown; query?: unknown };
    const queries = Array.isArray(args.queries)
      ? args.queries
      : typeof args.query === 'string'
        ? [args.query]
        : [];
    const clean = queries.filter((q): q is string => typeof q === 'string' && q.trim() !== '').slice(0, 5);
    return clean.length ? clean : [fallback];
  } catch {
    return [fallback];
  }
}

function retrievalFilters(plan: TurnPlan): RetrievalFilters {
  const f = plan.filters;
  const cutoff = f.time_cutoff ? new Date(f.time_cutoff) : null;
  const floor = plan.persona.search_start_date;
  const start = cutoff && floor ? new Date(Math.max(cutoff.getTime(), floor.getTime())) : (cutoff ?? floor);
  // The caller's document sets replace the agent's (they were checked before the turn began).
  const ownSets = !!f.document_set?.length;
  return {
    source_type: f.source_type ?? null,
    document_set: ownSets ? f.document_set : null,
    document_set_ids: ownSets ? null : plan.persona.document_set_ids,
    time_cutoff: start,
    tags: f.tags ?? null,
    document_ids: plan.persona.document_ids,
  };
}

/** Why a turn failed, as its stream and every surface report it. */
function failureOf(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof LlmProviderError)
    return new AppError(
      'LLM_PROVIDER_ERROR',
      `The model provider failed${error.status ? ` (HTTP ${error.status})` : ''}: ${error.message}`,
      { retryable: error.retryable, cause: error },
    );
  const { error_code, detail, is_retryable } = toErrorResponse(error);
  return new AppError(error_code, detail, { cause: error, retryable: is_retryable });
}
