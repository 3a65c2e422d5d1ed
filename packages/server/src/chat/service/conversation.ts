import type { Actor } from '../../auth/roles.ts';
import * as chatRepository from '../chat.repository.ts';
import { tokens } from '../prompt.ts';
import { type ChatDeps, createSessionRow } from './sessions.ts';

/** One earlier message of a conversation a client keeps itself (the OpenAI surface's `messages`). */
export interface ConversationMessage {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * A new session of the caller holding a conversation that happened elsewhere, as question/answer pairs on
 * its mainline, so the next turn (`parent_message_id: -1`) reads it as its history and the caller's history
 * shows it. Consecutive messages of one role are joined; an answer with no question before it gets an
 * empty one.
 */
export async function seedSession({
  ctx,
  personaId,
  description,
  messages,
}: {
  ctx: ChatDeps & { actor: Actor };
  personaId: number;
  description: string | null;
  messages: ConversationMessage[];
}): Promise<string> {
  const session = await createSessionRow(ctx, ctx.actor, {
    persona_id: personaId,
    description,
    project_id: null,
  });
  const pairs: Array<{ question: string; answer: string }> = [];
  for (const m of messages) {
    const last = pairs.at(-1);
    if (m.role === 'user') {
      if (last && last.answer === '') last.question += `\n\n${m.content}`;
      else pairs.push({ question: m.content, answer: '' });
    } else if (last) last.answer += last.answer ? `\n\n${m.content}` : m.content;
    else pairs.push({ question: '', answer: m.content });
  }
  if (!pairs.length) return session.id;
  // The first pair hangs from the session's root, made with it.
  let parentId: number | 'root' = 'root';
  for (const pair of pairs) {
    const written = await chatRepository.appendTurn(ctx.db, {
      sessionId: session.id,
      parentId,
      question: { message: pair.question, token_count: tokens(pair.question), files: [] },
      answer: { message: pair.answer, model_name: ctx.llm.defaultModel },
      session: { description, alternate_model: null, temperature: null },
    });
    await chatRepository.completeMessage(ctx.db, written.answer.id, {
      message: pair.answer,
      token_count: tokens(pair.answer),
      citations: {},
      context_docs: [],
      reasoning: null,
      error: null,
    });
    parentId = written.answer.id;
  }
  return session.id;
}
