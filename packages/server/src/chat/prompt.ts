import { countTokens } from 'gpt-tokenizer';
import type { LlmMessage } from '../llm/llm.types.ts';
import type { ChatPersona } from './persona.ts';

export const BASE_SYSTEM_PROMPT = `You are an expert assistant who is truthful, nuanced, insightful, and efficient. \
Your goal is to give the user an accurate, well-organised answer. When you are unsure, say so.{{CURRENT_DATETIME}}{{CITATION_GUIDANCE}}

# Response Style
Use Markdown: headings and lists where they help, code in fenced blocks with a language, tables for comparisons.`;

export const CITATION_GUIDANCE = `

CRITICAL: when you use information from the search results, cite it INLINE right after the sentence, using \
the document number in square brackets, for example [1] or [1][2]. DO NOT provide any links.`;

export const CITATION_REMINDER = 'Remember to provide inline citations in the format [1], [2], [3], etc.';

export const SEARCH_TOOL_DESCRIPTION =
  'Search the organisation’s indexed documents. Use it for any question that may be answered by internal knowledge.';

export function tokens(text: string): number {
  return text ? countTokens(text) : 0;
}

function formatDate(now: Date): string {
  return now.toLocaleDateString('en-US', { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' });
}

/** The system message: the base prompt or, with `replace_base_system_prompt`, the agent's own prompt. */
export function systemPrompt(persona: ChatPersona, options: { searched: boolean; now: Date }): string {
  const date = persona.datetime_aware ? `\n\nThe current date is ${formatDate(options.now)}.` : '';
  if (persona.replace_base_system_prompt && persona.system_prompt.trim()) {
    const custom = persona.system_prompt.replaceAll('{{CURRENT_DATETIME}}', formatDate(options.now));
    const hasDate = persona.system_prompt.includes('{{CURRENT_DATETIME}}');
    return `${custom}${hasDate ? '' : date}${options.searched ? CITATION_GUIDANCE : ''}`;
  }
  return BASE_SYSTEM_PROMPT.replace('{{CURRENT_DATETIME}}', date).replace(
    '{{CITATION_GUIDANCE}}',
    options.searched ? CITATION_GUIDANCE : '',
  );
}

export interface AttachedText {
  name: string;
  text: string;
}

export interface PromptParts {
  persona: ChatPersona;
  projectInstructions: string;
  /** Earlier turns along the message tree, oldest first. */
  history: Array<{ role: 'user' | 'assistant'; content: string }>;
  question: string;
  files: AttachedText[];
  additionalContext: string | null;
  /** Tool calls and their results of this turn so far. */
  toolMessages: LlmMessage[];
  searched: boolean;
  now: Date;
  contextWindow: number;
}

function fileBlock(files: AttachedText[], budget: number): string {
  let out = '';
  for (const file of files) {
    const header = `\n\n--- Attached file: ${file.name} ---\n`;
    let text = file.text;
    const room = budget - tokens(out) - tokens(header);
    if (room <= 0) break;
    if (tokens(text) > room) text = truncateToTokens(text, room);
    out += header + text;
  }
  return out;
}

export function truncateToTokens(text: string, max: number): string {
  if (tokens(text) <= max) return text;
  // Roughly four characters per token; shrink until it fits.
  let cut = Math.max(0, max * 4);
  let piece = text.slice(0, cut);
  while (cut > 0 && tokens(piece) > max) {
    cut = Math.floor(cut * 0.8);
    piece = text.slice(0, cut);
  }
  return piece;
}

/**
 * The messages of one model call. The context window is shared by a fixed part (system prompt, agent and
 * project instructions, the question with its files and extra context, this turn's tool results, the task
 * reminder) and the history, which is trimmed oldest turn first. The current question is never dropped.
 */
export function buildMessages(parts: PromptParts): LlmMessage[] {
  const { persona } = parts;
  const reserve = Math.min(4096, Math.floor(parts.contextWindow / 4));
  const available = parts.contextWindow - reserve;
  const system = systemPrompt(persona, { searched: parts.searched, now: parts.now });
  const instructions: string[] = [];
  if (!persona.replace_base_system_prompt && persona.system_prompt.trim())
    instructions.push(persona.system_prompt);
  if (parts.projectInstructions.trim())
    instructions.push(`Project instructions:\n${parts.projectInstructions}`);
  const agentMessage = instructions.join('\n\n');
  const reminderParts = [persona.task_prompt.trim(), parts.searched ? CITATION_REMINDER : ''].filter(Boolean);
  const reminder = reminderParts.join('\n\n');
  const context = parts.additionalContext?.trim() ? `Additional context:\n${parts.additionalContext}` : '';

  const toolTokens = parts.toolMessages.reduce(
    (n, m) =>
      n + tokens(m.content) + ('tool_calls' in m && m.tool_calls ? tokens(JSON.stringify(m.tool_calls)) : 0),
    0,
  );
  const fixed =
    tokens(system) +
    tokens(agentMessage) +
    tokens(reminder) +
    tokens(parts.question) +
    tokens(context) +
    toolTokens;
  const files = fileBlock(parts.files, Math.max(0, available - fixed));
  let historyBudget = available - fixed - tokens(files);

  const kept: LlmMessage[] = [];
  for (let i = parts.history.length - 1; i >= 0; i--) {
    const turn = parts.history[i]!;
    const cost = tokens(turn.content) + 4;
    if (cost > historyBudget) break;
    historyBudget -= cost;
    kept.unshift({ role: turn.role, content: turn.content });
  }
  // A history must not open with an answer whose question was trimmed.
  while (kept[0]?.role === 'assistant') kept.shift();

  const messages: LlmMessage[] = [{ role: 'system', content: system }, ...kept];
  if (agentMessage) messages.push({ role: 'user', content: agentMessage });
  if (context) messages.push({ role: 'user', content: context });
  messages.push({ role: 'user', content: parts.question + files });
  messages.push(...parts.toolMessages);
  if (reminder) messages.push({ role: 'user', content: reminder });
  return messages;
}

/** The search results as the model reads them: one numbered entry per document. */
export function searchResultJson(
  documents: Array<{
    number: number;
    title: string;
    link: string | null;
    updated_at: string | null;
    source_type: string;
    content: string;
  }>,
  budgetTokens: number,
): string {
  const results: unknown[] = [];
  let used = 20;
  for (const doc of documents) {
    const entry = {
      document: doc.number,
      title: doc.title,
      ...(doc.updated_at ? { updated_at: doc.updated_at } : {}),
      source_type: doc.source_type,
      ...(doc.link ? { url: doc.link } : {}),
      content: doc.content,
    };
    const cost = tokens(JSON.stringify(entry));
    if (used + cost > budgetTokens) {
      const room = budgetTokens - used - 40;
      if (room > 50) results.push({ ...entry, content: truncateToTokens(doc.content, room) });
      break;
    }
    used += cost;
    results.push(entry);
  }
  return JSON.stringify(
    results.length ? { results } : { results, note: 'No matching documents were found.' },
  );
}
