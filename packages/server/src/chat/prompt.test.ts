import { describe, expect, it } from 'vitest';
import type { ChatPersona } from './persona.ts';
import { buildMessages, type PromptParts, searchResultJson, tokens, tokensAtMost } from './prompt.ts';

const persona: ChatPersona = {
  id: 0,
  name: 'Assistant',
  system_prompt: '',
  task_prompt: '',
  datetime_aware: false,
  replace_base_system_prompt: false,
  document_set_ids: [],
  search_start_date: null,
  document_ids: [],
  search_enabled: true,
  tool_ids: [],
  action_tool_ids: [],
  llm_model_version_override: null,
};

const history = Array.from({ length: 6 }, (_, i) => ({
  role: i % 2 ? ('assistant' as const) : ('user' as const),
  content: `turn ${i}: ${'the quick brown fox jumps over the lazy dog '.repeat(5)}`,
}));

const parts = (contextWindow: number): PromptParts => ({
  persona,
  projectInstructions: '',
  history,
  question: 'Where does the fox jump?',
  files: [{ name: 'notes.txt', text: 'Foxes jump over dogs. '.repeat(10) }],
  additionalContext: null,
  toolMessages: [{ role: 'tool', tool_call_id: 'c1', name: 'internal_search', content: '{"results":[]}' }],
  searched: true,
  now: new Date('2026-01-01T00:00:00Z'),
  contextWindow,
});

/** The window whose budget (after the answer's reserve) is exactly `available` tokens. */
const windowFor = (available: number) => Math.ceil((available * 4) / 3);

describe('prompt budgets', () => {
  it('bounds tokens by UTF-8 bytes', () => {
    for (const text of ['plain words here', 'ünïcödé – “quotes” 日本語 🦊', '{"a":[1,2,3]}'])
      expect(tokens(text)).toBeLessThanOrEqual(tokensAtMost(text));
  });

  it('keeps everything when the prompt fits, whether it fits by the byte bound or only by tokens', () => {
    const everything = buildMessages(parts(1_000_000));
    expect(everything.filter((m) => m.role !== 'system' && m.role !== 'tool')).toHaveLength(
      history.length + 2,
    );
    const exact = everything.reduce((n, m) => n + tokens(m.content), 0) + 4 * history.length;
    const bytes = everything.reduce((n, m) => n + tokensAtMost(m.content), 0);
    expect(exact).toBeLessThan(bytes);
    // A budget the prompt fits in by its token count but not by its byte count takes the exact path.
    const tight = buildMessages(parts(windowFor(exact + 100)));
    expect(tight).toEqual(everything);
  });

  it('trims the oldest history first when the prompt does not fit', () => {
    const everything = buildMessages(parts(1_000_000));
    const exact = everything.reduce((n, m) => n + tokens(m.content), 0) + 4 * history.length;
    const trimmed = buildMessages(parts(windowFor(exact - 60)));
    const kept = trimmed.slice(1, -3);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(history.length);
    expect(kept.at(-1)!.content).toBe(history.at(-1)!.content);
    expect(kept[0]!.role).toBe('user');
  });

  it('sends every search result that fits, and cuts the last one that does not', () => {
    const documents = Array.from({ length: 5 }, (_, i) => ({
      number: i + 1,
      title: `Doc ${i + 1}`,
      link: null,
      updated_at: null,
      source_type: 'file',
      content: `document ${i + 1} ${'alpha beta gamma delta '.repeat(40)}`,
    }));
    const all = JSON.parse(searchResultJson(documents, 1_000_000)).results;
    expect(all.map((r: { document: number }) => r.document)).toEqual([1, 2, 3, 4, 5]);
    const exact = 20 + all.reduce((n: number, r: unknown) => n + tokens(JSON.stringify(r)), 0);
    // Fits by tokens, not by bytes: the exact path still sends everything, identically.
    expect(searchResultJson(documents, exact)).toBe(searchResultJson(documents, 1_000_000));
    const last = tokens(JSON.stringify(all[4]));
    const cut = JSON.parse(searchResultJson(documents, exact - Math.floor(last / 2))).results;
    expect(cut).toHaveLength(5);
    expect(cut[4].content.length).toBeLessThan(documents[4]!.content.length);
  });
});
