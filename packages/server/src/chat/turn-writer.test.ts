import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.ts';
import type { ChatStreamLine, SearchDoc } from './chat.schemas.ts';
import { Channel } from './service/channel.ts';
import { TurnFold } from './service/turn-result.ts';
import { TurnWriter } from './service/turn-writer.ts';

const DOC = {
  document_id: 'kb-parking',
  semantic_identifier: 'Parking rules',
  link: 'https://kb.example/parking',
} as SearchDoc;

async function linesOf(channel: Channel<ChatStreamLine>): Promise<ChatStreamLine[]> {
  channel.close();
  const lines: ChatStreamLine[] = [];
  for await (const line of channel) lines.push(line);
  return lines;
}

describe('the turn writer', () => {
  it('places each section after the last and keeps the result its lines fold into', async () => {
    const channel = new Channel<ChatStreamLine>();
    const out = new TurnWriter(channel);
    out.opened({ createdSessionId: 's-1', userMessageId: 1, assistantMessageId: 2 });
    out.reason('Looking ');
    out.reason('up parking.');
    out.searchStarted(['parking']);
    out.searchFound([DOC]);
    out.actionStarted({ name: 'lookup', tool_id: 7 }, { q: 'garage' });
    out.actionDone({
      tool_name: 'lookup',
      tool_id: 7,
      response_type: 'text',
      data: 'level 2',
      file_ids: [],
      error: null,
    });
    out.startAnswer([DOC], 0.5);
    out.answer({ text: 'Level 2 ', cited: [] });
    out.answer({
      text: '[[1]](https://kb.example/parking).',
      cited: [{ citation_number: 1, document_id: 'kb-parking' }],
    });
    out.stop(null);
    out.answer({ text: 'after the end', cited: [] });
    const lines = await linesOf(channel);

    const sections = lines.flatMap((l) => ('obj' in l ? [[l.placement.turn_index, l.obj.type]] : []));
    expect(sections).toEqual([
      [0, 'reasoning_start'],
      [0, 'reasoning_delta'],
      [0, 'reasoning_delta'],
      [0, 'reasoning_done'],
      [1, 'search_tool_start'],
      [1, 'search_tool_queries_delta'],
      [1, 'search_tool_documents_delta'],
      [1, 'section_end'],
      [2, 'custom_tool_start'],
      [2, 'custom_tool_args'],
      [2, 'custom_tool_delta'],
      [2, 'section_end'],
      [3, 'message_start'],
      [3, 'message_delta'],
      [3, 'message_delta'],
      [3, 'citation_info'],
      [3, 'stop'],
    ]);
    expect(lines.slice(0, 2)).toEqual([
      { chat_session_id: 's-1' },
      { user_message_id: 1, reserved_assistant_message_id: 2 },
    ]);
    expect(out.hasEnded).toBe(true);
    expect(out.result).toMatchObject({
      answer: 'Level 2 [[1]](https://kb.example/parking).',
      citations: [{ citation_number: 1, document_id: 'kb-parking' }],
      documents: [DOC],
      reasoning: 'Looking up parking.',
      toolCalls: [
        { tool_name: 'internal_search', tool_arguments: { queries: ['parking'] }, search_docs: [DOC] },
        { tool_name: 'lookup', tool_arguments: { q: 'garage' }, search_docs: [] },
      ],
      stopReason: null,
      failure: null,
    });
    // A surface reading the kept lines (a resumed stream) folds them into the same result.
    const fold = new TurnFold();
    for (const line of lines) fold.add(line);
    expect(fold.result).toEqual(out.result);
  });

  it('ends a failed turn with its error line, the result holding the error itself', async () => {
    const channel = new Channel<ChatStreamLine>();
    const out = new TurnWriter(channel);
    out.opened({ createdSessionId: null, userMessageId: 1, assistantMessageId: 2 });
    out.startAnswer(null, 0);
    out.answer({ text: 'Partial', cited: [] });
    const error = new AppError('LLM_PROVIDER_ERROR', 'The model provider failed (HTTP 500): boom', {
      retryable: true,
    });
    out.fail(error);
    out.fail(new AppError('INTERNAL_ERROR', 'a second failure is not written'));
    out.stop(null);
    const lines = await linesOf(channel);
    expect(lines.at(-1)).toEqual({
      error: 'The model provider failed (HTTP 500): boom',
      error_code: 'LLM_PROVIDER_ERROR',
      is_retryable: true,
    });
    expect(lines.filter((l) => 'error' in l)).toHaveLength(1);
    expect(out.result.failure).toBe(error);
    expect(out.result.answer).toBe('Partial');
    const fold = new TurnFold();
    for (const line of lines) fold.add(line);
    expect(fold.result.failure).toMatchObject({
      error_code: 'LLM_PROVIDER_ERROR',
      detail: error.detail,
      retryable: true,
    });
  });
});
