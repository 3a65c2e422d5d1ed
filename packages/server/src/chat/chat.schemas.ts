import { z } from 'zod';
import { BaseFilters, SearchDoc as BaseSearchDoc } from '../search/search.schemas.ts';
import { Timestamp, TimestampInput } from '../timestamps.ts';

export const ChatSessionId = z.uuid().meta({ description: 'Chat session id (UUID)' });
export const SharedStatus = z.enum(['private', 'public']).meta({ id: 'ChatSessionSharedStatus' });
export type SharedStatus = z.infer<typeof SharedStatus>;
export const MessageType = z.enum(['system', 'user', 'assistant']);

/** A retrieved document as chat reports it: the admin-search shape plus the reference's chat fields. */
export const SearchDoc = BaseSearchDoc.extend({
  primary_owners: z.array(z.string()).nullable(),
  secondary_owners: z.array(z.string()).nullable(),
  is_internet: z.boolean(),
}).meta({ id: 'ChatSearchDoc' });
export type SearchDoc = z.infer<typeof SearchDoc>;

export const FileDescriptor = z
  .object({
    id: z.string().min(1),
    type: z.string().default('document'),
    name: z.string().nullable().optional(),
  })
  .meta({ id: 'FileDescriptor' });
export type FileDescriptor = z.infer<typeof FileDescriptor>;

export const Citations = z
  .record(z.string(), z.string())
  .meta({ description: 'Map of citation number to document id' });

export const ChatMessageDetail = z
  .object({
    chat_session_id: z.string(),
    message_id: z.number().int(),
    parent_message: z.number().int().nullable(),
    latest_child_message: z.number().int().nullable(),
    message: z.string(),
    message_type: MessageType,
    time_sent: Timestamp,
    citations: Citations,
    context_docs: z.array(SearchDoc),
    files: z.array(FileDescriptor),
    error: z.string().nullable(),
    model_name: z.string().nullable(),
    tool_calls: z
      .array(
        z.object({
          tool_name: z.string(),
          tool_id: z.number().int().nullable(),
          tool_arguments: z.unknown(),
          response: z.unknown(),
        }),
      )
      .meta({ description: 'The action calls made while writing this answer' }),
  })
  .meta({ id: 'ChatMessageDetail' });
export type ChatMessageDetail = z.infer<typeof ChatMessageDetail>;

export const ChatSessionDetail = z
  .object({
    chat_session_id: z.string(),
    description: z.string(),
    persona_id: z.number().int(),
    persona_name: z.string(),
    project_id: z.number().int().nullable(),
    messages: z.array(ChatMessageDetail),
    time_created: Timestamp,
    time_updated: Timestamp,
    shared_status: SharedStatus,
    current_alternate_model: z.string().nullable(),
    current_temperature_override: z.number().nullable(),
    deleted: z.boolean(),
    run_in_progress: z.boolean().optional().meta({
      description:
        'An answer is being written now (resume its stream at `GET /api/chat/chat-session/{session_id}/resume-stream`)',
    }),
  })
  .meta({ id: 'ChatSessionDetail' });
export type ChatSessionDetail = z.infer<typeof ChatSessionDetail>;

export const ChatSessionSummary = z
  .object({
    id: z.string(),
    name: z.string(),
    persona_id: z.number().int(),
    project_id: z.number().int().nullable(),
    time_created: Timestamp,
    time_updated: Timestamp,
    shared_status: SharedStatus,
    current_alternate_model: z.string().nullable(),
    current_temperature_override: z.number().nullable(),
  })
  .meta({ id: 'ChatSessionSummary' });
export type ChatSessionSummary = z.infer<typeof ChatSessionSummary>;

export const CreateChatSessionInput = z.object({
  persona_id: z.number().int().min(0).default(0),
  description: z.string().max(1000).nullable().optional(),
  project_id: z.number().int().positive().nullable().optional(),
});
export type CreateChatSessionInput = z.infer<typeof CreateChatSessionInput>;
export const CreateChatSessionResponse = z.object({ chat_session_id: z.string() });

export const GetChatSessionInput = z.object({
  session_id: ChatSessionId,
  is_shared: z.boolean().default(false),
  include_deleted: z.boolean().default(false),
});

export const ListChatSessionsInput = z.object({
  page_size: z.number().int().min(1).max(100).default(50),
  before: TimestampInput.optional(),
  project_id: z.number().int().positive().optional(),
  only_non_project_chats: z.boolean().default(true),
  include_failed_chats: z.boolean().default(false),
});
export type ListChatSessionsInput = z.infer<typeof ListChatSessionsInput>;
export const ListChatSessionsResponse = z
  .object({ sessions: z.array(ChatSessionSummary), has_more: z.boolean() })
  .meta({ id: 'ChatSessionList' });

export const DeleteChatSessionInput = z.object({
  session_id: ChatSessionId,
  hard_delete: z.boolean().optional(),
});

export const ResumeStreamInput = z.object({
  session_id: ChatSessionId,
  cursor: z.number().int().min(0).default(0).meta({
    description: 'Lines the client already has (not counting `chat_heartbeat` lines); 0 replays all',
  }),
});
export type ResumeStreamInput = z.infer<typeof ResumeStreamInput>;

export const StopChatSessionInput = z.object({ chat_session_id: ChatSessionId });
export const StopChatSessionResponse = z.object({ message: z.string() });

export const UpdateSharingInput = z.object({ session_id: ChatSessionId, sharing_status: SharedStatus });

export const SetMessageAsLatestInput = z.object({
  message_id: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 1)
    .meta({ description: 'The message that becomes the latest child of its parent (switches branches)' }),
});
export type SetMessageAsLatestInput = z.infer<typeof SetMessageAsLatestInput>;

export const RenameChatSessionInput = z.object({
  chat_session_id: ChatSessionId,
  name: z.string().trim().min(1).max(255).nullable().optional(),
});
export const RenameChatSessionResponse = z.object({ new_name: z.string() });

export const SearchChatsInput = z.object({
  query: z.string().max(500).optional(),
  page: z.number().int().min(1).default(1),
  page_size: z.number().int().min(1).max(100).default(10),
});
export type SearchChatsInput = z.infer<typeof SearchChatsInput>;
export const ChatSearchGroupTitle = z.enum(['Today', 'Yesterday', 'This Week', 'This Month', 'Older']);
export const SearchChatsResponse = z
  .object({
    groups: z.array(z.object({ title: ChatSearchGroupTitle, chats: z.array(ChatSessionSummary) })),
    has_more: z.boolean(),
    next_page: z.number().int().nullable(),
  })
  .meta({ id: 'ChatSearchResponse' });
export type SearchChatsResponse = z.infer<typeof SearchChatsResponse>;

export const LlmOverride = z
  .object({
    model_name: z.string().min(1).max(200).nullable().optional(),
    model_provider: z.string().min(1).max(100).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
  })
  .meta({ id: 'LlmOverride' });

export const SearchFilters = BaseFilters;
export type SearchFilters = z.infer<typeof SearchFilters>;

export const SendMessageInput = z
  .object({
    message: z.string().max(200_000),
    chat_session_id: ChatSessionId.nullable().optional(),
    chat_session_info: z
      .object({
        persona_id: z.number().int().min(0).default(0),
        description: z.string().max(1000).nullable().optional(),
        project_id: z.number().int().positive().nullable().optional(),
      })
      .nullable()
      .optional(),
    stream: z.boolean().default(true),
    parent_message_id: z
      .number()
      .int()
      .nullable()
      .default(-1)
      .meta({ description: '-1 appends after the latest message; null regenerates from the root' }),
    llm_override: LlmOverride.nullable().optional(),
    include_citations: z.boolean().default(true),
    internal_search_filters: SearchFilters.nullable().optional(),
    file_descriptors: z.array(FileDescriptor).max(20).default([]),
    additional_context: z.string().max(100_000).nullable().optional(),
    deep_research: z.boolean().default(false),
  })
  .meta({ id: 'SendMessageRequest' });
export type SendMessageInput = z.infer<typeof SendMessageInput>;

export const CitationInfo = z.object({
  type: z.literal('citation_info'),
  citation_number: z.number().int(),
  document_id: z.string(),
});

export const ChatFullResponse = z
  .object({
    answer: z.string(),
    answer_citationless: z.string(),
    chat_message_id: z.number().int(),
    message_id: z.number().int(),
    user_message_id: z.number().int().nullable(),
    chat_session_id: z.string(),
    context_docs: z.object({ top_documents: z.array(SearchDoc) }),
    top_documents: z.array(SearchDoc),
    citations: Citations,
    citation_info: z.array(CitationInfo),
    pre_answer_reasoning: z.string().nullable(),
    tool_calls: z.array(
      z.object({
        tool_name: z.string(),
        tool_arguments: z.record(z.string(), z.unknown()),
        search_docs: z.array(SearchDoc),
      }),
    ),
    error_msg: z.string().nullable(),
  })
  .meta({ id: 'ChatFullResponse' });
export type ChatFullResponse = z.infer<typeof ChatFullResponse>;

export const Placement = z.object({
  turn_index: z.number().int(),
  tab_index: z.number().int(),
  sub_turn_index: z.number().int().nullable(),
});
export type Placement = z.infer<typeof Placement>;

/** The `obj` of a stream packet. */
export const PacketObj = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('message_start'),
    final_documents: z.array(SearchDoc).nullable(),
    pre_answer_processing_seconds: z.number(),
  }),
  z.object({ type: z.literal('message_delta'), content: z.string() }),
  CitationInfo,
  z.object({ type: z.literal('search_tool_start'), is_internet_search: z.boolean() }),
  z.object({ type: z.literal('search_tool_queries_delta'), queries: z.array(z.string()) }),
  z.object({ type: z.literal('search_tool_documents_delta'), documents: z.array(SearchDoc) }),
  z.object({ type: z.literal('section_end') }),
  z.object({ type: z.literal('reasoning_start') }),
  z.object({ type: z.literal('reasoning_delta'), reasoning: z.string() }),
  z.object({ type: z.literal('reasoning_done') }),
  z.object({
    type: z.literal('custom_tool_start'),
    tool_name: z.string(),
    tool_id: z.number().int().nullable(),
  }),
  z.object({
    type: z.literal('custom_tool_args'),
    tool_name: z.string(),
    tool_args: z.record(z.string(), z.unknown()),
  }),
  z.object({
    type: z.literal('custom_tool_delta'),
    tool_name: z.string(),
    tool_id: z.number().int().nullable(),
    response_type: z.string(),
    data: z.unknown(),
    file_ids: z.array(z.string()),
    error: z
      .object({ is_auth_error: z.boolean(), status_code: z.number().int().nullable(), message: z.string() })
      .nullable(),
  }),
  z.object({
    type: z.literal('stop'),
    stop_reason: z.enum(['user_cancelled', 'shutdown']).nullable().meta({
      description:
        'null: the answer is complete; user_cancelled: stopped through stop-chat-session; shutdown: cut short because the server was shutting down',
    }),
  }),
  /** Keep-alive: sent when nothing else was for a while (15 s). */
  z.object({ type: z.literal('chat_heartbeat') }),
]);
export type PacketObj = z.infer<typeof PacketObj>;

/** One line of the chat stream, in the order DESIGN.md fixes. */
export const ChatStreamLine = z
  .union([
    z.object({ chat_session_id: z.string() }),
    z.object({
      user_message_id: z.number().int().nullable(),
      reserved_assistant_message_id: z.number().int(),
    }),
    z.object({ placement: Placement, obj: PacketObj }),
    z.object({ error: z.string(), error_code: z.string(), is_retryable: z.boolean() }),
  ])
  .meta({ id: 'ChatStreamLine' });
export type ChatStreamLine = z.infer<typeof ChatStreamLine>;
