import { type KasRestClient, unwrap } from '../client-core.ts';
import { ApiError } from '../errors.ts';
import type { components } from '../generated/openapi.ts';
import type { KasTrpcClient } from '../trpc.ts';
import { toApiError } from '../trpc.ts';
import type { QueryParams, RequestBody } from '../types.ts';

type S = components['schemas'];
/** The body of `send-chat-message`. */
export type SendMessageInput = RequestBody<'/api/chat/send-chat-message', 'post'>;
/** One line of the chat stream (session id, message ids, a `{placement, obj}` packet, or an error). */
export type ChatStreamLine = S['ChatStreamLine'];
/** A `{placement, obj}` line of the chat stream. */
export type ChatPacket = Extract<ChatStreamLine, { obj: unknown }>;
/** The `obj` of a packet: `message_delta`, `citation_info`, `search_tool_documents_delta`, `stop`, … */
export type PacketObj = ChatPacket['obj'];
/** The error line that ends a stream that failed after it started. */
export type ChatStreamError = Extract<ChatStreamLine, { error: string }>;

/** True for `{placement, obj}` lines. */
export function isPacket(line: ChatStreamLine): line is ChatPacket {
  return 'obj' in line;
}

/** A file to upload and attach to a message. */
export interface UploadFile {
  name: string;
  content: Blob | Uint8Array | string;
  type?: string;
}

/** Splits a byte stream into parsed NDJSON lines. */
async function* readNdjson(body: ReadableStream<Uint8Array>): AsyncGenerator<ChatStreamLine> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) yield JSON.parse(line) as ChatStreamLine;
      newline = buffer.indexOf('\n');
    }
  }
  const rest = (buffer + decoder.decode()).trim();
  if (rest) yield JSON.parse(rest) as ChatStreamLine;
}

/** Chat sessions, streamed and whole answers, sharing, history search, projects and uploads. */
export function chatApi(
  rest: KasRestClient,
  trpc: KasTrpcClient,
  options: { baseUrl: string; apiKey?: string; fetch?: typeof fetch },
) {
  const doFetch = options.fetch ?? fetch;
  const auth: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};

  const openResume = async (sessionId: string, cursor: number, signal: AbortSignal | undefined) => {
    const response = await doFetch(
      `${options.baseUrl}/api/chat/chat-session/${encodeURIComponent(sessionId)}/resume-stream?cursor=${cursor}`,
      { headers: auth, ...(signal ? { signal } : {}) },
    );
    if (!response.ok || !response.body) throw await ApiError.fromResponse(response);
    return response.body;
  };

  return {
    /** Creates a session with an agent (default 0). */
    createSession: (input: RequestBody<'/api/chat/create-chat-session', 'post'> = {}) =>
      unwrap(rest.POST('/api/chat/create-chat-session', { body: input })),
    /** A session with its messages. `is_shared: true` reads a public session (no key needed). */
    getSession: (
      sessionId: string,
      query: QueryParams<'/api/chat/get-chat-session/{session_id}', 'get'> = {},
    ): Promise<S['ChatSessionDetail']> =>
      unwrap(
        rest.GET('/api/chat/get-chat-session/{session_id}', {
          params: { path: { session_id: sessionId }, query },
        }),
      ),
    /** The caller's sessions, newest first; pass `before` to page. */
    listSessions: (
      query: QueryParams<'/api/chat/get-user-chat-sessions', 'get'> = {},
    ): Promise<S['ChatSessionList']> =>
      unwrap(rest.GET('/api/chat/get-user-chat-sessions', { params: { query } })),
    /** Deletes a session (soft or hard per `hard_delete` and the instance's policy). */
    deleteSession: async (
      sessionId: string,
      query: QueryParams<'/api/chat/delete-chat-session/{session_id}', 'delete'> = {},
    ) => {
      await unwrap(
        rest.DELETE('/api/chat/delete-chat-session/{session_id}', {
          params: { path: { session_id: sessionId }, query },
        }),
      );
    },
    /** Makes a session public (readable without a key via `is_shared`) or private. */
    share: (sessionId: string, sharing_status: 'public' | 'private'): Promise<S['ChatSessionSummary']> =>
      unwrap(
        rest.PATCH('/api/chat/chat-session/{session_id}', {
          params: { path: { session_id: sessionId } },
          body: { sharing_status },
        }),
      ),
    /** Renames a session; without a name the model proposes one. */
    rename: (sessionId: string, name?: string | null) =>
      unwrap(rest.PUT('/api/chat/rename-chat-session', { body: { chat_session_id: sessionId, name } })),
    /** Stops the answer being generated in a session (from any process). */
    stop: (sessionId: string) =>
      unwrap(
        rest.POST('/api/chat/stop-chat-session/{chat_session_id}', {
          params: { path: { chat_session_id: sessionId } },
        }),
      ),
    /** Searches the caller's chat history; no query gives the most recent sessions. */
    search: (query: QueryParams<'/api/chat/search', 'get'> = {}): Promise<S['ChatSearchResponse']> =>
      unwrap(rest.GET('/api/chat/search', { params: { query } })),

    /** Sends a message and waits for the whole answer (`stream: false`). */
    send: (input: Omit<SendMessageInput, 'stream'>): Promise<S['ChatFullResponse']> =>
      unwrap(
        rest.POST('/api/chat/send-chat-message', { body: { ...input, stream: false } as SendMessageInput }),
      ) as Promise<S['ChatFullResponse']>,

    /**
     * Sends a message and yields the stream's lines as they arrive, over the REST NDJSON route (default)
     * or the tRPC streaming link. Errors before the stream starts throw ApiError; a failure after it
     * started arrives as a final `{error, error_code, is_retryable}` line on both transports.
     *
     * On the REST route a dropped connection is resumed by itself (`resume: false` turns it off): the
     * stream continues from the next line through `resume-stream`, from whichever kas process answers,
     * so no line is lost or repeated. When the answer can no longer be resumed (it ended long ago), the
     * ApiError (404) is thrown: read the saved message with `getSession`.
     */
    async *stream(
      input: Omit<SendMessageInput, 'stream'>,
      streamOptions: {
        transport?: 'rest' | 'trpc';
        signal?: AbortSignal;
        /** Resume after a dropped connection (REST only; default true). */
        resume?: boolean;
        /** How many times one stream is resumed at most (default 5). */
        maxResumes?: number;
      } = {},
    ): AsyncGenerator<ChatStreamLine> {
      if (streamOptions.transport === 'trpc') {
        let lines: AsyncIterable<ChatStreamLine>;
        try {
          lines = (await trpc.chat.sendMessageStream.mutate(input as never, {
            signal: streamOptions.signal,
          })) as AsyncIterable<ChatStreamLine>;
        } catch (error) {
          throw toApiError(error);
        }
        try {
          for await (const line of lines) yield line;
        } catch (error) {
          const apiError = toApiError(error);
          if (!(apiError instanceof ApiError)) throw apiError;
          yield {
            error: apiError.detail,
            error_code: apiError.error_code,
            is_retryable: apiError.is_retryable,
          };
        }
        return;
      }
      const response = await doFetch(`${options.baseUrl}/api/chat/send-chat-message`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ ...input, stream: true }),
        signal: streamOptions.signal,
      });
      if (!response.ok || !response.body) throw await ApiError.fromResponse(response);
      let sessionId = input.chat_session_id ?? null;
      let cursor = 0;
      let resumes = 0;
      let body: ReadableStream<Uint8Array> = response.body;
      while (true) {
        let ended = false;
        try {
          for await (const line of readNdjson(body)) {
            if (isPacket(line) && line.obj.type === 'chat_heartbeat') {
              yield line;
              continue;
            }
            cursor++;
            if ('chat_session_id' in line) sessionId = line.chat_session_id;
            if ('error' in line || (isPacket(line) && line.obj.type === 'stop')) ended = true;
            yield line;
          }
          if (ended) return;
        } catch (error) {
          if (streamOptions.signal?.aborted || streamOptions.resume === false || !sessionId) throw error;
          if (resumes >= (streamOptions.maxResumes ?? 5)) throw error;
        }
        // The connection ended before the answer did: resume from the next line.
        if (streamOptions.resume === false || !sessionId || resumes >= (streamOptions.maxResumes ?? 5))
          return;
        await new Promise((resolve) => setTimeout(resolve, 100 * resumes));
        resumes++;
        body = await openResume(sessionId, cursor, streamOptions.signal);
      }
    },

    /**
     * The session's latest answer from line `cursor` (lines already received, not counting
     * `chat_heartbeat` lines), following it live to its end, from any kas process. 404 (ApiError) when
     * there is nothing to resume.
     */
    async *resumeStream(
      sessionId: string,
      cursor = 0,
      streamOptions: { signal?: AbortSignal } = {},
    ): AsyncGenerator<ChatStreamLine> {
      yield* readNdjson(await openResume(sessionId, cursor, streamOptions.signal));
    },

    /** Uploads files (text, Markdown, PDF, DOCX) to attach as `file_descriptors`. */
    uploadFiles: async (files: UploadFile[]): Promise<S['UploadFilesResponse']> => {
      const form = new FormData();
      for (const file of files) {
        const blob =
          file.content instanceof Blob
            ? file.content
            : new Blob([file.content as BlobPart], { type: file.type ?? 'application/octet-stream' });
        form.append('files', blob, file.name);
      }
      const response = await doFetch(`${options.baseUrl}/api/chat/file`, {
        method: 'POST',
        headers: auth,
        body: form,
      });
      if (!response.ok) throw await ApiError.fromResponse(response);
      return (await response.json()) as S['UploadFilesResponse'];
    },

    /** The caller's projects (folders of chats with optional instructions). */
    projects: {
      list: () => unwrap(rest.GET('/api/user/projects')),
      create: (input: RequestBody<'/api/user/projects', 'post'>): Promise<S['UserProject']> =>
        unwrap(rest.POST('/api/user/projects', { body: input })),
      update: (
        projectId: number,
        input: RequestBody<'/api/user/projects/{project_id}', 'patch'>,
      ): Promise<S['UserProject']> =>
        unwrap(
          rest.PATCH('/api/user/projects/{project_id}', {
            params: { path: { project_id: projectId } },
            body: input,
          }),
        ),
      delete: async (projectId: number) => {
        await unwrap(
          rest.DELETE('/api/user/projects/{project_id}', { params: { path: { project_id: projectId } } }),
        );
      },
    },
  };
}

/** Collects a stream into the answer text, the cited documents and the final stop reason. */
export async function collectAnswer(lines: AsyncIterable<ChatStreamLine>): Promise<{
  chat_session_id?: string;
  reserved_assistant_message_id?: number;
  answer: string;
  citations: Array<{ citation_number: number; document_id: string }>;
  documents: S['ChatSearchDoc'][];
  stop_reason: string | null | undefined;
  error?: ChatStreamError;
}> {
  const result: Awaited<ReturnType<typeof collectAnswer>> = {
    answer: '',
    citations: [],
    documents: [],
    stop_reason: undefined,
  };
  for await (const line of lines) {
    if ('chat_session_id' in line) result.chat_session_id = line.chat_session_id;
    else if ('reserved_assistant_message_id' in line)
      result.reserved_assistant_message_id = line.reserved_assistant_message_id;
    else if ('error' in line) result.error = line;
    else if ('obj' in line) {
      const obj = line.obj;
      if (obj.type === 'message_delta') result.answer += obj.content;
      else if (obj.type === 'citation_info')
        result.citations.push({ citation_number: obj.citation_number, document_id: obj.document_id });
      else if (obj.type === 'search_tool_documents_delta')
        result.documents.push(...(obj.documents as S['ChatSearchDoc'][]));
      else if (obj.type === 'stop') result.stop_reason = obj.stop_reason;
    }
  }
  return result;
}
