import { documentsService } from '@kas/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { answerOf, readAll } from './chat-helpers.ts';

/** An agent's document sets scope what the built-in answerer searches and cites. */
describe('chat with a custom agent scoped to document sets (built-in answerer)', () => {
  let s: TestServer;
  let key: string;
  const sets: Record<'hr' | 'eng', number> = { hr: 0, eng: 0 };

  beforeAll(async () => {
    s = await startTestServer();
    key = (await s.createKey('basic', 'agent user')).key;
    const docs = {
      hr: [
        ['hr-parking', 'HR parking policy', 'Parking permits for employees cost 40 euros per month.'],
        ['hr-leave', 'HR leave policy', 'Parental leave lasts sixteen weeks.'],
      ],
      eng: [
        ['eng-parking', 'Engineering parking runbook', 'Parking the staging cluster happens every Friday.'],
      ],
    } as const;
    for (const team of ['hr', 'eng'] as const) {
      // Connectors have no HTTP route yet: the pair is made by the service, everything else goes over HTTP.
      const pair = await documentsService.createCcPair({
        ctx: s.running.runtime.deps,
        input: { name: `${team} pair`, access_type: 'public' },
      });
      for (const [id, title, text] of docs[team]) {
        const res = await s.request('POST', '/api/svc-api/ingestion', {
          key: s.adminKey,
          body: {
            cc_pair_id: pair.cc_pair_id,
            document: {
              id,
              semantic_identifier: title,
              sections: [{ text, link: `https://kb.example/${id}` }],
            },
          },
        });
        expect(res.status).toBe(200);
      }
      const set = await s.request('POST', '/api/manage/admin/document-set', {
        key: s.adminKey,
        body: { name: `${team} set`, cc_pair_ids: [pair.cc_pair_id], is_public: true },
      });
      expect(set.status).toBe(200);
      sets[team] = ((await set.json()) as { id: number }).id;
    }
  });
  afterAll(async () => {
    await s?.close();
  });

  const createAgent = async (documentSetIds: number[]) => {
    const res = await s.request('POST', '/api/persona', {
      key: s.adminKey,
      body: {
        name: `scoped ${documentSetIds.join(',') || 'none'}`,
        description: 'scoped agent',
        system_prompt: 'You answer questions about company policies.',
        task_prompt: '',
        datetime_aware: false,
        is_public: true,
        document_set_ids: documentSetIds,
        tool_ids: [1],
      },
    });
    expect(res.status).toBe(200);
    const agent = (await res.json()) as { id: number; document_sets: Array<{ id: number }> };
    expect(agent.document_sets.map((d) => d.id)).toEqual(documentSetIds);
    return agent.id;
  };
  const ask = async (personaId: number, message: string) => {
    const res = await s.request('POST', '/api/chat/send-chat-message', {
      key,
      body: { message, chat_session_info: { persona_id: personaId } },
    });
    expect(res.status).toBe(200);
    const lines = await readAll(res);
    const searched = lines
      .filter((l) => l.obj?.type === 'search_tool_documents_delta')
      .flatMap((l) => l.obj.documents.map((d: { document_id: string }) => d.document_id));
    const cited = lines.filter((l) => l.obj?.type === 'citation_info').map((l) => l.obj.document_id);
    return { answer: answerOf(lines), searched, cited };
  };

  it('searches and cites only the agent’s document sets', async () => {
    const question = 'How does parking work?';
    // Without a scope both teams' parking documents are found: the question itself matches both.
    const open = await ask(0, question);
    expect(new Set(open.searched)).toEqual(new Set(['hr-parking', 'eng-parking']));

    const hr = await ask(await createAgent([sets.hr]), question);
    expect(hr.searched).toEqual(['hr-parking']);
    expect(hr.cited).toEqual(['hr-parking']);
    expect(hr.answer).toContain('Parking permits for employees cost 40 euros per month.');
    expect(hr.answer).not.toContain('staging cluster');

    const eng = await ask(await createAgent([sets.eng]), question);
    expect(eng.searched).toEqual(['eng-parking']);
    expect(eng.cited).toEqual(['eng-parking']);
    expect(eng.answer).not.toContain('permits');

    const both = await ask(await createAgent([sets.hr, sets.eng]), question);
    expect(new Set(both.cited)).toEqual(new Set(['hr-parking', 'eng-parking']));
  });

  it('finds nothing outside the agent’s sets, even when another set answers the question', async () => {
    const question = 'How long is parental leave?';
    expect((await ask(0, question)).cited).toEqual(['hr-leave']);
    const eng = await ask(await createAgent([sets.eng]), question);
    expect(eng.searched).not.toContain('hr-leave');
    expect(eng.cited).toEqual([]);
    expect(eng.answer).not.toContain('sixteen weeks');
  });
});
