import { type AppError, toErrorResponse } from '../../errors.ts';
import type { ChatStreamLine, PacketObj, SearchDoc } from '../chat.schemas.ts';
import type { Channel } from './channel.ts';
import { TurnFold, type TurnResult } from './turn-result.ts';

type StopReason = Extract<PacketObj, { type: 'stop' }>['stop_reason'];
type ActionDone = Omit<Extract<PacketObj, { type: 'custom_tool_delta' }>, 'type'>;

/**
 * Writes one turn's lines: it owns their placement (a section per search, action or reasoning block, each
 * ended before the next begins) and folds each line into the turn's `TurnResult` as it is written, so no
 * surface reads the stream back to learn what the turn said. Nothing is written after the last line.
 */
export class TurnWriter {
  private section = 0;
  private reasoningOpen = false;
  private answerOpen = false;
  private ended = false;
  private readonly fold = new TurnFold();
  private readonly channel: Channel<ChatStreamLine>;

  constructor(channel: Channel<ChatStreamLine>) {
    this.channel = channel;
  }

  /** What the turn said so far; complete once it has ended. */
  get result(): TurnResult {
    return this.fold.result;
  }

  /** Whether the answer has begun (`message_start` is written). */
  get answering(): boolean {
    return this.answerOpen;
  }

  /** Whether the last line (`stop` or the error line) is written. */
  get hasEnded(): boolean {
    return this.ended;
  }

  private write(line: ChatStreamLine) {
    if (this.ended) return;
    this.channel.push(line);
    this.fold.add(line);
  }

  private packet(obj: PacketObj) {
    this.write({ placement: { turn_index: this.section, tab_index: 0, sub_turn_index: null }, obj });
  }

  private endSection() {
    this.packet({ type: 'section_end' });
    this.section++;
  }

  /** The turn's first lines: the new session's id (when it created one), then the rows of the turn. */
  opened(ids: { createdSessionId: string | null; userMessageId: number | null; assistantMessageId: number }) {
    if (ids.createdSessionId) this.write({ chat_session_id: ids.createdSessionId });
    this.write({
      user_message_id: ids.userMessageId,
      reserved_assistant_message_id: ids.assistantMessageId,
    });
  }

  /** Reasoning text, in the open reasoning section (opened if none is). */
  reason(text: string) {
    if (!this.reasoningOpen) {
      this.packet({ type: 'reasoning_start' });
      this.reasoningOpen = true;
    }
    this.packet({ type: 'reasoning_delta', reasoning: text });
  }

  closeReasoning() {
    if (!this.reasoningOpen) return;
    this.reasoningOpen = false;
    this.packet({ type: 'reasoning_done' });
    this.section++;
  }

  searchStarted(queries: string[]) {
    this.closeReasoning();
    this.packet({ type: 'search_tool_start', is_internet_search: false });
    this.packet({ type: 'search_tool_queries_delta', queries });
  }

  searchFound(documents: SearchDoc[]) {
    this.packet({ type: 'search_tool_documents_delta', documents });
    this.endSection();
  }

  actionStarted(tool: { name: string; tool_id: number | null }, args: Record<string, unknown>) {
    this.closeReasoning();
    this.packet({ type: 'custom_tool_start', tool_name: tool.name, tool_id: tool.tool_id });
    this.packet({ type: 'custom_tool_args', tool_name: tool.name, tool_args: args });
  }

  actionDone(done: ActionDone) {
    this.packet({ type: 'custom_tool_delta', ...done });
    this.endSection();
  }

  /** Opens the answer once, with the documents it is written from. */
  startAnswer(documents: SearchDoc[] | null, preAnswerSeconds: number) {
    this.closeReasoning();
    if (this.answerOpen) return;
    this.answerOpen = true;
    this.packet({
      type: 'message_start',
      final_documents: documents,
      pre_answer_processing_seconds: preAnswerSeconds,
    });
  }

  /** A piece of the answer and the documents it cites for the first time. */
  answer(piece: { text: string; cited: Array<{ citation_number: number; document_id: string }> }) {
    if (piece.text) this.packet({ type: 'message_delta', content: piece.text });
    for (const c of piece.cited) this.packet({ type: 'citation_info', ...c });
  }

  /** The last line of a turn that ended, completed or stopped. */
  stop(reason: StopReason) {
    this.packet({ type: 'stop', stop_reason: reason });
    this.ended = true;
  }

  /** The last line of a turn that failed: the error line, and the error itself as the result's failure. */
  fail(error: AppError) {
    if (this.ended) return;
    const { detail, error_code, is_retryable } = toErrorResponse(error);
    this.channel.push({ error: detail, error_code, is_retryable });
    this.fold.result.failure = error;
    this.ended = true;
  }
}
