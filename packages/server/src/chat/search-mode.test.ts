import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, fakeOpenAiEnv, startFakeOpenAi } from '../../../../test/fakes/openai.ts';
import type { SearchMode } from '../personas/personas.schemas.ts';
import type { RuntimeFixture } from '../testing/runtime-fixture.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { objs, streamAll } from './chat.test-helpers.ts';

const DOC = {
  id: 'kb-parking',
  semantic_identifier: 'Parking rules',
  source: 'file' as const,
  sections: [{ text: 'Visitors park on level 2 of the garage.', link: 'https://kb.example/parking' }],
};

async function agentWith(t: RuntimeFixture, search_mode: SearchMode | null | undefined) {
  const admin = t.admin();
  const tools = await admin.tools.list({});
  const search = tools.find((tool) => tool.in_code_tool_id === 'SearchTool')!;
  const { id } = await admin.personas.create({
    name: `Agent ${search_mode}`,
    description: '',
    system_prompt: '',
    task_prompt: '',
    datetime_aware: false,
    is_public: true,
    document_set_ids: [],
    tool_ids: [search.id],
    ...(search_mode === undefined ? {} : { search_mode }),
  });
  return id;
}

async function searchesOf(t: RuntimeFixture, persona_id: number) {
  const lines = await streamAll(t.admin(), {
    message: 'Where do visitors park?',
    chat_session_info: { persona_id },
  });
  return objs(lines).flatMap((o) => (o.type === 'search_tool_queries_delta' ? [o.queries] : []));
}

describe('search_mode with a model without tool calling (the built-in answerer)', () => {
  const t = useTestRuntime();
  beforeAll(async () => {
    await t.admin().documents.ingest({ document: DOC });
  });

  it('searches first by default, and never when told, which the agent shows', async () => {
    const byDefault = await agentWith(t, undefined);
    expect(await searchesOf(t, byDefault)).toEqual([['Where do visitors park?']]);
    expect((await t.admin().personas.get({ persona_id: byDefault })).search_mode).toBeNull();

    const never = await agentWith(t, 'never');
    expect(await searchesOf(t, never)).toEqual([]);
    expect((await t.admin().personas.get({ persona_id: never })).search_mode).toBe('never');
    await t.admin().personas.update({ persona_id: never, search_mode: 'always_first' });
    expect(await searchesOf(t, never)).toEqual([['Where do visitors park?']]);
  });
});

describe('search_mode with a tool-calling model', () => {
  let llm: FakeLlmServer;
  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    await llm?.close();
  });
  const t = useTestRuntime(() => fakeOpenAiEnv(llm));

  it('searches only when the model asks by default, first when the agent says so, and offers no search tool for never', async () => {
    await t.admin().documents.ingest({ document: DOC });
    const byDefault = await agentWith(t, undefined);
    llm.enqueue({ tokens: ['No search needed.'] });
    expect(await searchesOf(t, byDefault)).toEqual([]);
    expect(llm.requests.at(-1)!.tools.map((tool: any) => tool.function.name)).toEqual(['internal_search']);

    const first = await agentWith(t, 'always_first');
    llm.enqueue({ tokens: ['Level 2 [1].'] });
    expect(await searchesOf(t, first)).toEqual([['Where do visitors park?']]);
    const asked = llm.requests.at(-1)!;
    expect(JSON.stringify(asked.messages)).toContain('level 2 of the garage');

    const never = await agentWith(t, 'never');
    llm.enqueue({ tokens: ['I cannot search.'] });
    expect(await searchesOf(t, never)).toEqual([]);
    expect(llm.requests.at(-1)!.tools).toBeUndefined();
  });
});
