import { AppError, ERROR_CODES, type ErrorCode } from '../../errors.ts';
import type { ChatStreamLine, PacketObj, SearchDoc } from '../chat.schemas.ts';

type PacketStop = Extract<PacketObj, { type: 'stop' }>;

/** What a turn said once all its lines are read: the one reading of the packets every surface shares. */
export interface TurnResult {
  /** The answer as streamed: citation markers rendered `[[n]](link)`. */
  answer: string;
  /** Each cited document once, in the order first cited. */
  citations: Array<{ citation_number: number; document_id: string }>;
  /** The documents the answer was written from (`message_start`). */
  documents: SearchDoc[];
  /** Every document each search returned, by document id (the first seen of each). */
  searched: Map<string, SearchDoc>;
  reasoning: string | null;
  toolCalls: Array<{ tool_name: string; tool_arguments: Record<string, unknown>; search_docs: SearchDoc[] }>;
  stopReason: PacketStop['stop_reason'];
  /** Why the turn failed after it began (its stream ended with the error line), else null. */
  failure: AppError | null;
}

/**
 * Folds a turn's lines, in order, into its `TurnResult`; `add` each line as it is read. The turn's writer
 * folds each line it writes; a surface that reads kept lines (a resumed stream) folds them alike.
 */
export class TurnFold {
  readonly result: TurnResult = {
    answer: '',
    citations: [],
    documents: [],
    searched: new Map(),
    reasoning: null,
    toolCalls: [],
    stopReason: null,
    failure: null,
  };

  add(line: ChatStreamLine): void {
    const r = this.result;
    if ('error' in line) {
      r.failure = failureError(line);
      return;
    }
    if (!('obj' in line)) return;
    const obj = line.obj;
    switch (obj.type) {
      case 'message_delta':
        r.answer += obj.content;
        break;
      case 'message_start':
        r.documents = obj.final_documents ?? [];
        for (const doc of r.documents)
          if (!r.searched.has(doc.document_id)) r.searched.set(doc.document_id, doc);
        break;
      case 'citation_info':
        r.citations.push({ citation_number: obj.citation_number, document_id: obj.document_id });
        break;
      case 'reasoning_delta':
        r.reasoning = (r.reasoning ?? '') + obj.reasoning;
        break;
      case 'search_tool_queries_delta':
        r.toolCalls.push({
          tool_name: 'internal_search',
          tool_arguments: { queries: obj.queries },
          search_docs: [],
        });
        break;
      case 'custom_tool_args':
        r.toolCalls.push({ tool_name: obj.tool_name, tool_arguments: obj.tool_args, search_docs: [] });
        break;
      case 'search_tool_documents_delta': {
        const last = r.toolCalls.at(-1);
        if (last) last.search_docs = obj.documents;
        for (const doc of obj.documents)
          if (!r.searched.has(doc.document_id)) r.searched.set(doc.document_id, doc);
        break;
      }
      case 'stop':
        r.stopReason = obj.stop_reason;
        break;
      default:
        break;
    }
  }
}

/** A kept error line as the error every surface throws (an unknown code is an internal error). */
function failureError(failure: { error: string; error_code: string; is_retryable: boolean }): AppError {
  const code = (ERROR_CODES as string[]).includes(failure.error_code)
    ? (failure.error_code as ErrorCode)
    : 'INTERNAL_ERROR';
  return new AppError(code, failure.error, { retryable: failure.is_retryable });
}
