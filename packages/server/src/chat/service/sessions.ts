import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { AppError } from '../../errors.ts';
import * as projectsService from '../../projects/projects.service.ts';
import type { MessageRow, SessionRow } from '../chat.repository.ts';
import * as chatRepository from '../chat.repository.ts';
import type {
  ChatMessageDetail,
  ChatSessionDetail,
  ChatSessionSummary,
  CreateChatSessionInput,
  ListChatSessionsInput,
  SearchChatsInput,
  SearchChatsResponse,
  SearchDoc,
  SetMessageAsLatestInput,
  SharedStatus,
} from '../chat.schemas.ts';
import { loadPersona, personaName } from '../persona.ts';

export type ChatDeps = ServiceContext<
  'db' | 'dbRead' | 'config' | 'llm' | 'search' | 'logger' | 'stopRegistry' | 'secrets' | 'outbound' | 'cpu'
>;

const iso = (d: Date | string) => new Date(d).toISOString();

export function toSummary(row: SessionRow): ChatSessionSummary {
  return {
    id: row.id,
    name: row.description,
    persona_id: row.persona_id,
    project_id: row.project_id,
    time_created: iso(row.time_created),
    time_updated: iso(row.time_updated),
    shared_status: row.shared_status,
    current_alternate_model: row.current_alternate_model,
    current_temperature_override: row.current_temperature_override,
  };
}

export function toMessageDetail(row: MessageRow): ChatMessageDetail {
  return {
    chat_session_id: row.chat_session_id,
    message_id: row.id,
    parent_message: row.parent_message_id,
    latest_child_message: row.latest_child_message_id,
    message: row.message,
    message_type: row.message_type,
    time_sent: iso(row.time_sent),
    citations: row.citations,
    context_docs: row.context_docs as SearchDoc[],
    files: row.files as ChatMessageDetail['files'],
    error: row.error,
    model_name: row.model_name,
    tool_calls: (row.tool_calls ?? []) as ChatMessageDetail['tool_calls'],
  };
}

/** A session the caller owns: 404 when unknown (or deleted, unless allowed), 403 when someone else's. */
export async function ownedSession(
  ctx: { db: Db },
  actor: Actor,
  sessionId: string,
  options: { includeDeleted?: boolean } = {},
): Promise<SessionRow> {
  const session = await chatRepository.findSession(ctx.db, sessionId);
  if (!session) throw new AppError('SESSION_NOT_FOUND', `Chat session ${sessionId} not found`);
  if (session.user_id !== actor.user_id)
    throw new AppError('INSUFFICIENT_PERMISSIONS', 'Access denied: the chat session belongs to another user');
  if (session.deleted && !options.includeDeleted)
    throw new AppError('SESSION_NOT_FOUND', `Chat session ${sessionId} has been deleted`);
  return session;
}

export async function createSession({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: CreateChatSessionInput;
}): Promise<{ chat_session_id: string }> {
  const { actor } = ctx;
  const session = await createSessionRow(ctx, actor, {
    persona_id: input.persona_id,
    description: input.description ?? null,
    project_id: input.project_id ?? null,
  });
  return { chat_session_id: session.id };
}

export async function createSessionRow(
  ctx: ChatDeps,
  actor: Actor,
  info: { persona_id: number; description: string | null; project_id: number | null },
): Promise<SessionRow> {
  await loadPersona({ ctx, actor, personaId: info.persona_id });
  if (info.project_id !== null)
    await projectsService.getOwnedProject({ ctx, actor, projectId: info.project_id });
  return chatRepository.insertSession(ctx.db, {
    user_id: actor.user_id,
    persona_id: info.persona_id,
    description: info.description ?? '',
    project_id: info.project_id,
  });
}

export async function getSession({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor | null };
  input: { session_id: string; is_shared: boolean; include_deleted: boolean };
}): Promise<ChatSessionDetail> {
  const { actor } = ctx;
  let session: SessionRow;
  if (input.is_shared) {
    const found = await chatRepository.findSession(ctx.db, input.session_id);
    if (!found) throw new AppError('SESSION_NOT_FOUND', `Chat session ${input.session_id} not found`);
    const owner = actor?.user_id === found.user_id;
    if (found.shared_status !== 'public')
      throw new AppError('INSUFFICIENT_PERMISSIONS', 'Chat session is not shared');
    if (found.deleted && !(owner && input.include_deleted))
      throw new AppError('SESSION_NOT_FOUND', `Chat session ${input.session_id} has been deleted`);
    session = found;
  } else {
    if (!actor)
      throw new AppError('UNAUTHENTICATED', 'Missing API key: send Authorization: Bearer <API_KEY>');
    session = await ownedSession(ctx, actor, input.session_id, { includeDeleted: input.include_deleted });
  }
  // History may come from a replica (at most KAS_REPLICA_MAX_LAG_MS behind); a turn reads the primary.
  const messages = await chatRepository.listMessages(ctx.dbRead, session.id);
  return {
    chat_session_id: session.id,
    description: session.description,
    persona_id: session.persona_id,
    persona_name: await personaName({ ctx, personaId: session.persona_id }),
    project_id: session.project_id,
    messages: messages.map(toMessageDetail),
    time_created: iso(session.time_created),
    time_updated: iso(session.time_updated),
    shared_status: session.shared_status,
    current_alternate_model: session.current_alternate_model,
    current_temperature_override: session.current_temperature_override,
    deleted: session.deleted,
    // An answer not yet saved, begun recently enough to still be written (one whose process died is
    // never saved, and stops counting once its stream would have been evicted).
    run_in_progress: messages.some(
      (m) =>
        m.message_type === 'assistant' &&
        !m.is_complete &&
        Date.now() - new Date(m.time_sent).getTime() < ctx.config.KAS_STREAM_BUFFER_MAX_AGE_S * 1000,
    ),
  };
}

export async function listSessions({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: ListChatSessionsInput;
}): Promise<{ sessions: ChatSessionSummary[]; has_more: boolean }> {
  const { actor } = ctx;
  const rows = await chatRepository.listSessions(ctx.dbRead, {
    user_id: actor.user_id,
    before: input.before,
    project_id: input.project_id,
    only_non_project_chats: input.only_non_project_chats,
    include_failed_chats: input.include_failed_chats,
    limit: input.page_size + 1,
  });
  return { sessions: rows.slice(0, input.page_size).map(toSummary), has_more: rows.length > input.page_size };
}

export async function deleteSession({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: { session_id: string; hard_delete?: boolean | undefined };
}): Promise<void> {
  const { actor } = ctx;
  const hard = input.hard_delete ?? ctx.config.KAS_HARD_DELETE_CHATS;
  const session = await ownedSession(ctx, actor, input.session_id, { includeDeleted: hard });
  if (hard) await chatRepository.deleteSession(ctx.db, session.id);
  else await chatRepository.updateSession(ctx.db, session.id, { deleted: true });
  ctx.stopRegistry.stopLocal(session.id);
}

export async function updateSharing({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: { session_id: string; sharing_status: SharedStatus };
}): Promise<ChatSessionSummary> {
  const { actor } = ctx;
  const session = await ownedSession(ctx, actor, input.session_id);
  await chatRepository.updateSession(ctx.db, session.id, { shared_status: input.sharing_status });
  return toSummary({ ...session, shared_status: input.sharing_status });
}

/**
 * Switches branches: the message becomes the latest child of its parent, so the mainline (what `-1` appends
 * to, and the history the model reads) follows it and then its own latest children.
 */
export async function setMessageAsLatest({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: SetMessageAsLatestInput;
}): Promise<void> {
  const { actor } = ctx;
  const message = await chatRepository.findMessage(ctx.db, input.message_id);
  if (!message) throw new AppError('MESSAGE_NOT_FOUND', `Chat message ${input.message_id} not found`);
  await ownedSession(ctx, actor, message.chat_session_id);
  if (message.parent_message_id === null) return;
  await chatRepository.setLatestChild(ctx.db, message.parent_message_id, message.id);
}

export async function renameSession({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: { chat_session_id: string; name?: string | null | undefined };
}): Promise<{ new_name: string }> {
  const { actor } = ctx;
  const session = await ownedSession(ctx, actor, input.chat_session_id);
  let name = input.name ?? null;
  if (!name) {
    const first = (await chatRepository.listMessages(ctx.db, session.id)).find(
      (m) => m.message_type === 'user',
    );
    name = first ? await generateName(ctx, first.message) : 'New chat';
  }
  await chatRepository.updateSession(ctx.db, session.id, { description: name });
  return { new_name: name };
}

async function generateName(ctx: ChatDeps, question: string): Promise<string> {
  const fallback = question.split(/\s+/).slice(0, 6).join(' ').slice(0, 80) || 'New chat';
  try {
    let text = '';
    for await (const event of ctx.llm.stream({
      purpose: 'name',
      question,
      max_output_tokens: 20,
      messages: [
        {
          role: 'system',
          content:
            'Give a title of at most five words for a chat that starts with the message below. Reply with the title only.',
        },
        { role: 'user', content: question },
      ],
    })) {
      if (event.type === 'text') text += event.text;
    }
    return (
      text
        .trim()
        .replace(/^["']|["']$/g, '')
        .slice(0, 80) || fallback
    );
  } catch (error) {
    ctx.logger.warn({ err: error }, 'naming a chat session failed');
    return fallback;
  }
}

export async function stopSession({
  ctx,
  sessionId,
}: {
  ctx: ChatDeps & { actor: Actor };
  sessionId: string;
}): Promise<{ message: string }> {
  const { actor } = ctx;
  const session = await ownedSession(ctx, actor, sessionId);
  await chatRepository.requestStop(ctx.db, session.id);
  ctx.stopRegistry.stopLocal(session.id);
  return { message: 'Chat session stopped' };
}

const DAY = 24 * 60 * 60 * 1000;

function groupTitle(created: Date, now: Date): SearchChatsResponse['groups'][number]['title'] {
  const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const t = created.getTime();
  if (t >= startOfToday) return 'Today';
  if (t >= startOfToday - DAY) return 'Yesterday';
  if (t >= startOfToday - 6 * DAY) return 'This Week';
  if (t >= startOfToday - 29 * DAY) return 'This Month';
  return 'Older';
}

export async function searchSessions({
  ctx,
  input,
  now = new Date(),
}: {
  ctx: ChatDeps & { actor: Actor };
  input: SearchChatsInput;
  now?: Date;
}): Promise<SearchChatsResponse> {
  const { actor } = ctx;
  const rows = await chatRepository.searchSessions(ctx.dbRead, {
    user_id: actor.user_id,
    query: input.query,
    limit: input.page_size + 1,
    offset: (input.page - 1) * input.page_size,
  });
  const hasMore = rows.length > input.page_size;
  const groups: SearchChatsResponse['groups'] = [];
  for (const row of rows.slice(0, input.page_size)) {
    const title = groupTitle(new Date(row.time_created), now);
    let group = groups.find((g) => g.title === title);
    if (!group) {
      group = { title, chats: [] };
      groups.push(group);
    }
    group.chats.push(toSummary(row));
  }
  return { groups, has_more: hasMore, next_page: hasMore ? input.page + 1 : null };
}
