import { countTokens } from '../documents/chunking.ts';
import type { LlmMessage } from '../llm/llm.types.ts';
import { type AttachedText, tokensAtMost } from './attachments.ts';
import type { ChatPersona } from './persona.ts';

export { type AttachedText, tokensAtMost };

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

// Formatters are built once: `toLocaleDateString` builds a new one on every call (~0.3 ms each).
const DATE_FORMAT = new Intl.DateTimeFormat('en-US', {
  weekday: 'long',
  year: 'numeric',
  month: 'long',
  day: 'numeric',
  timeZone: 'UTC',
});
const TIME_FORMAT = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });

/** The date and time the model is told, in UTC, e.g. "Monday, October 16, 2023, 14:05 UTC". */
export function formatDateTime(now: Date): string {
  return `${DATE_FORMAT.format(now)}, ${TIME_FORMAT.format(now)} UTC`;
}

/**
 * The system message, as the spec composes it: the agent's `system_prompt` prepended to the base prompt (or,
 * with `replace_base_system_prompt`, instead of it), the current date and time when the agent is
 * `datetime_aware`, the citation rules once a search ran, the project's instructions, and last the agent's
 * `task_prompt`.
 */
export function systemPrompt(
  persona: ChatPersona,
  options: { searched: boolean; now: Date; projectInstructions?: string },
): string {
  const now = formatDateTime(options.now);
  const date = persona.datetime_aware ? `\n\nThe current date and time is ${now}.` : '';
  const citation = options.searched ? CITATION_GUIDANCE : '';
  const agentPrompt = persona.system_prompt.trim();
  let system: string;
  if (persona.replace_base_system_prompt && agentPrompt) {
    const hasDate = agentPrompt.includes('{{CURRENT_DATETIME}}');
    system = `${agentPrompt.replaceAll('{{CURRENT_DATETIME}}', now)}${hasDate ? '' : date}${citation}`;
  } else {
    const base = BASE_SYSTEM_PROMPT.replace('{{CURRENT_DATETIME}}', date).replace(
      '{{CITATION_GUIDANCE}}',
      citation,
    );
    system = agentPrompt ? `${agentPrompt}\n\n${base}` : base;
  }
  const project = options.projectInstructions?.trim();
  if (project) system += `\n\n# Project instructions\n${project}`;
  const task = persona.task_prompt.trim();
  if (task) system += `\n\n${task}`;
  return system;
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

function fileHeader(file: AttachedText): string {
  return `\n\n--- Attached file: ${file.name} ---\n`;
}

function fileBlock(files: AttachedText[], budget: number): string {
  let out = '';
  for (const file of files) {
    const header = fileHeader(file);
    let text = file.text;
    const room = budget - tokens(out) - tokens(header);
    if (room <= 0) break;
    if (tokens(text) > room) text = truncateToTokens(text, room);
    out += header + text;
  }
  return out;
}

export function truncateToTokens(text: string, max: number): string {
  if (tokensAtMost(text) <= max || tokens(text) <= max) return text;
  // Roughly four characters per token; shrink until it fits.
  let cut = Math.max(0, max * 4);
  let piece = text.slice(0, cut);
  while (cut > 0 && tokens(piece) > max) {
    cut = Math.floor(cut * 0.8);
    piece = text.slice(0, cut);
  }
  return piece;
}

/** The tokens of the window kept for the answer: a quarter of it, at most 4096. */
export function answerReserve(contextWindow: number): number {
  return Math.min(4096, Math.floor(contextWindow / 4));
}

/**
 * The messages of one model call: the system message, the history, the additional context, the question
 * with its attached files, this turn's tool calls and results, and the citation reminder once a search ran.
 * A quarter of the window (at most 4096 tokens) is kept for the answer; the rest is shared by the fixed
 * part and the history, which is trimmed oldest turn first. The current question is never cut or dropped.
 */
export function buildMessages(parts: PromptParts): LlmMessage[] {
  const { persona } = parts;
  const reserve = answerReserve(parts.contextWindow);
  const available = parts.contextWindow - reserve;
  const system = systemPrompt(persona, {
    searched: parts.searched,
    now: parts.now,
    projectInstructions: parts.projectInstructions,
  });
  const reminder = parts.searched ? CITATION_REMINDER : '';
  const context = parts.additionalContext?.trim() ? `Additional context:\n${parts.additionalContext}` : '';

  const toolText = (m: LlmMessage) =>
    m.content + ('tool_calls' in m && m.tool_calls ? JSON.stringify(m.tool_calls) : '');
  // Everything fits by the free upper bound: no trimming, so no tokenizing.
  const wholeFiles = parts.files.map((f) => fileHeader(f) + f.text);
  const bound =
    [system, reminder, parts.question, context, ...wholeFiles, ...parts.toolMessages.map(toolText)].reduce(
      (n, text) => n + tokensAtMost(text),
      0,
    ) + parts.history.reduce((n, turn) => n + tokensAtMost(turn.content) + 4, 0);
  if (bound <= available)
    return assemble(parts, system, reminder, context, wholeFiles.join(''), parts.history);

  const toolTokens = parts.toolMessages.reduce(
    (n, m) =>
      n + tokens(m.content) + ('tool_calls' in m && m.tool_calls ? tokens(JSON.stringify(m.tool_calls)) : 0),
    0,
  );
  const fixed = tokens(system) + tokens(reminder) + tokens(parts.question) + tokens(context) + toolTokens;
  const files = fileBlock(parts.files, Math.max(0, available - fixed));
  let historyBudget = available - fixed - tokens(files);

  const kept: PromptParts['history'] = [];
  for (let i = parts.history.length - 1; i >= 0; i--) {
    const turn = parts.history[i]!;
    const cost = tokens(turn.content) + 4;
    if (cost > historyBudget) break;
    historyBudget -= cost;
    kept.unshift(turn);
  }
  return assemble(parts, system, reminder, context, files, kept);
}

function assemble(
  parts: PromptParts,
  system: string,
  reminder: string,
  context: string,
  files: string,
  history: PromptParts['history'],
): LlmMessage[] {
  const kept: LlmMessage[] = history.map((turn) => ({ role: turn.role, content: turn.content }));
  // A history must not open with an answer whose question was trimmed.
  while (kept[0]?.role === 'assistant') kept.shift();
  const messages: LlmMessage[] = [{ role: 'system', content: system }, ...kept];
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
  const entries = documents.map((doc) => ({
    document: doc.number,
    title: doc.title,
    ...(doc.updated_at ? { updated_at: doc.updated_at } : {}),
    source_type: doc.source_type,
    ...(doc.link ? { url: doc.link } : {}),
    content: doc.content,
  }));
  if (entries.length) {
    const whole = JSON.stringify({ results: entries });
    if (20 + tokensAtMost(whole) <= budgetTokens) return whole;
  }
  const results: unknown[] = [];
  let used = 20;
  for (const entry of entries) {
    const cost = tokens(JSON.stringify(entry));
    if (used + cost > budgetTokens) {
      const room = budgetTokens - used - 40;
      if (room > 50) results.push({ ...entry, content: truncateToTokens(entry.content, room) });
      break;
    }
    used += cost;
    results.push(entry);
  }
  return JSON.stringify(
    results.length ? { results } : { results, note: 'No matching documents were found.' },
  );
}
