import { z } from 'zod';
import { limitedProcedure, optionalAuthProcedure, router, serviceContext } from '../trpc.ts';
import {
  ChatFullResponse,
  ChatSessionDetail,
  ChatSessionSummary,
  ChatStreamLine,
  CreateChatSessionInput,
  CreateChatSessionResponse,
  DeleteChatSessionInput,
  GetChatSessionInput,
  ListChatSessionsInput,
  ListChatSessionsResponse,
  RenameChatSessionInput,
  RenameChatSessionResponse,
  ResumeStreamInput,
  SearchChatsInput,
  SearchChatsResponse,
  SendMessageInput,
  SetMessageAsLatestInput,
  StopChatSessionInput,
  StopChatSessionResponse,
  UpdateSharingInput,
} from './chat.schemas.ts';
import * as chatService from './chat.service.ts';

const tags = ['Chat'];

export const chatRouter = router({
  createSession: limitedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/chat/create-chat-session',
        tags,
        summary: 'Create a chat session',
        description: '403 naming the agent when the caller may not use it; 403 for another user’s project.',
      },
    })
    .input(CreateChatSessionInput)
    .output(CreateChatSessionResponse)
    .mutation(({ ctx, input }) => chatService.createSession({ ctx: serviceContext(ctx), input })),

  getSession: optionalAuthProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/chat/get-chat-session/{session_id}',
        tags,
        summary: 'Get a chat session with all its messages',
        description: 'With `is_shared=true` a public session is readable without an API key.',
        protect: false,
      },
    })
    .input(GetChatSessionInput)
    .output(ChatSessionDetail)
    .query(({ ctx, input }) => chatService.getSession({ ctx: serviceContext(ctx), input })),

  listSessions: limitedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/chat/get-user-chat-sessions',
        tags,
        summary: "List the caller's chat sessions",
        description:
          "The caller's sessions, newest first, `page_size` at a time; pass the `time_created` of the last one as `before` for the next page.",
      },
    })
    .input(ListChatSessionsInput)
    .output(ListChatSessionsResponse)
    .query(({ ctx, input }) => chatService.listSessions({ ctx: serviceContext(ctx), input })),

  deleteSession: limitedProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'DELETE',
        path: '/chat/delete-chat-session/{session_id}',
        tags,
        summary: 'Delete a chat session',
        description:
          'Soft or hard per `hard_delete`; when omitted the instance policy (KAS_HARD_DELETE_CHATS) decides.',
      },
    })
    .input(DeleteChatSessionInput)
    .output(z.void())
    .mutation(({ ctx, input }) => chatService.deleteSession({ ctx: serviceContext(ctx), input })),

  stopSession: limitedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/chat/stop-chat-session/{chat_session_id}',
        tags,
        summary: 'Stop the generation of a session',
        description: 'Works from any server process; the partial answer is saved.',
      },
    })
    .input(StopChatSessionInput)
    .output(StopChatSessionResponse)
    .mutation(({ ctx, input }) =>
      chatService.stopSession({
        ctx: serviceContext(ctx),
        sessionId: input.chat_session_id,
      }),
    ),

  updateSharing: limitedProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/chat/chat-session/{session_id}',
        tags,
        summary: 'Share or unshare a chat session',
        description:
          '`public` lets anyone with the session id read it without a key (`is_shared=true`); `private` takes that back.',
      },
    })
    .input(UpdateSharingInput)
    .output(ChatSessionSummary)
    .mutation(({ ctx, input }) => chatService.updateSharing({ ctx: serviceContext(ctx), input })),

  renameSession: limitedProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/chat/rename-chat-session',
        tags,
        summary: 'Rename a chat session',
        description: 'Without a name, one is generated from the first message.',
      },
    })
    .input(RenameChatSessionInput)
    .output(RenameChatSessionResponse)
    .mutation(({ ctx, input }) => chatService.renameSession({ ctx: serviceContext(ctx), input })),

  setMessageAsLatest: limitedProcedure
    .meta({
      noContent: true,
      openapi: {
        method: 'PUT',
        path: '/chat/set-message-as-latest',
        tags,
        summary: 'Switch to the branch of a message',
        description:
          'Makes the message the latest child of its parent: later messages sent with the default ' +
          '`parent_message_id` (-1) continue that branch. 403 for another user’s session; 404 for an unknown message.',
      },
    })
    .input(SetMessageAsLatestInput)
    .output(z.void())
    .mutation(({ ctx, input }) => chatService.setMessageAsLatest({ ctx: serviceContext(ctx), input })),

  search: limitedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/chat/search',
        tags,
        summary: "Search the caller's chat history",
        description:
          'Text search over session names and messages, grouped by age. No query: the most recent sessions.',
      },
    })
    .input(SearchChatsInput)
    .output(SearchChatsResponse)
    .query(({ ctx, input }) => chatService.searchSessions({ ctx: serviceContext(ctx), input })),

  sendMessage: limitedProcedure
    .meta({
      streamLine: ChatStreamLine,
      openapi: {
        method: 'POST',
        path: '/chat/send-chat-message',
        tags,
        summary: 'Send a chat message',
        description:
          'With `stream: true` (the default) the answer is an NDJSON stream (`text/event-stream`): an optional ' +
          '`{chat_session_id}` line, `{user_message_id, reserved_assistant_message_id}`, `{placement, obj}` packets ' +
          'and a final `stop` packet; errors after the first byte are a `{error, error_code, is_retryable}` line. ' +
          'With `stream: false` the response is one `ChatFullResponse`.',
      },
    })
    .input(SendMessageInput)
    .output(ChatFullResponse)
    .mutation(({ ctx, input }) => chatService.sendMessage({ ctx: serviceContext(ctx), input })),

  /** The streaming turn for tRPC clients: yields the same lines as the NDJSON route. RPC-only. */
  sendMessageStream: limitedProcedure.input(SendMessageInput).mutation(async function* ({ ctx, input }) {
    yield* chatService.streamMessage({ ctx: serviceContext(ctx), input });
  }),

  /**
   * The session's latest answer from line `cursor`, following it live to its end: the NDJSON route (written
   * by the REST bridge's chat routes; `streamLine` documents its lines, as a generator has no `.output()`),
   * and tRPC clients.
   */
  resumeStream: limitedProcedure
    .meta({
      streamLine: ChatStreamLine,
      openapi: {
        method: 'GET',
        path: '/chat/chat-session/{session_id}/resume-stream',
        tags,
        summary: "Resume an answer's stream",
        description:
          "The session's latest answer as an NDJSON stream (`text/event-stream`) from line `cursor` (the lines the " +
          'client already has, not counting `chat_heartbeat` lines), then its live run to its `stop` line, from ' +
          'any kas process. The lines are those of `send-chat-message`. 404 when the session is not the ' +
          "caller's or has no answer kept (none was streamed, or it ended more than KAS_STREAM_BUFFER_MAX_AGE_S " +
          "ago): read the session's messages instead.",
      },
    })
    .input(ResumeStreamInput)
    .mutation(async function* ({ ctx, input }) {
      yield* chatService.resumeStream({ ctx: serviceContext(ctx), input });
    }),
});
