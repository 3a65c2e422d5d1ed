import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Json } from '../db/columns.ts';

export interface ChatSessionsTable {
  id: Generated<string>;
  user_id: string;
  persona_id: Generated<number>;
  project_id: number | null;
  description: Generated<string>;
  shared_status: Generated<'private' | 'public'>;
  deleted: Generated<boolean>;
  current_alternate_model: string | null;
  current_temperature_override: number | null;
  stop_requested_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  time_created: CreatedAt;
  time_updated: CreatedAt;
}

export interface ChatMessagesTable {
  id: Generated<number>;
  chat_session_id: string;
  parent_message_id: number | null;
  latest_child_message_id: number | null;
  message_type: 'system' | 'user' | 'assistant';
  message: string;
  token_count: Generated<number>;
  citations: Json<Record<string, string>>;
  context_docs: Json<unknown[]>;
  files: Json<unknown[]>;
  reasoning: string | null;
  /** The tool calls of an assistant turn: `[{tool_name, tool_id, tool_arguments, response}]`. */
  tool_calls: Json<unknown[]>;
  error: string | null;
  is_complete: Generated<boolean>;
  model_name: string | null;
  time_sent: CreatedAt;
}

/** One line of an answer's stream (its NDJSON text), kept while the run may be resumed. */
export interface ChatStreamLinesTable {
  message_id: number;
  seq: number;
  line: string;
  /** The run's final line (`stop` or an error). */
  last: Generated<boolean>;
  created_at: CreatedAt;
}

export interface ChatTables {
  chat_sessions: ChatSessionsTable;
  chat_messages: ChatMessagesTable;
  chat_stream_lines: ChatStreamLinesTable;
}
