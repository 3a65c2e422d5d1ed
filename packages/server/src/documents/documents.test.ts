import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';
import { BLURB_TOKENS, CHUNK_TOKENS, chunkDocument } from './chunking.ts';
import * as documentsService from './documents.service.ts';

let t: TestRuntime;
beforeAll(async () => {
  t = await createTestRuntime();
});
afterAll(async () => {
  await t?.close();
});

async function errorOf(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    return error as { error_code?: string; status?: number; detail?: string };
  }
  throw new Error('expected an error');
}

const doc = (over: Record<string, unknown> = {}) => ({
  semantic_identifier: 'Onboarding guide',
  sections: [
    { text: 'Welcome to the team. Read the handbook first.', link: 'https://wiki/onboarding#intro' },
  ],
  ...over,
});

describe('chunking', () => {
  it('keeps chunks within the token budget, sentence-aligned, with section links and blurbs', () => {
    const sentence = 'The quick brown fox jumps over the lazy dog near the river bank. ';
    const chunks = chunkDocument({
      title: 'Foxes',
      sections: [
        { text: 'Short intro.', link: 'https://a#intro' },
        { text: sentence.repeat(120), link: 'https://a#body' },
      ],
    });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.token_count).toBeLessThanOrEqual(CHUNK_TOKENS);
      expect(chunk.title).toBe('Foxes');
      expect(chunk.content.trim().endsWith('.')).toBe(true);
      expect(chunk.blurb.length).toBeGreaterThan(0);
      expect(chunk.blurb.length).toBeLessThan(chunk.content.length + 1);
    }
    expect(chunks[0]!.link).toBe('https://a#intro');
    expect(chunks[0]!.section_links).toEqual({ '0': 'https://a#intro', '13': 'https://a#body' });
    expect(chunks[1]!.link).toBe('https://a#body');
    expect(chunks.map((c) => c.chunk_id)).toEqual(chunks.map((_, i) => i));
    // The whole text survives chunking.
    expect(
      chunks
        .map((c) => c.content)
        .join('')
        .replace(/\s+/g, ''),
    ).toBe(`Short intro.${sentence.repeat(120)}`.replace(/\s+/g, ''));
  });

  it('splits a sentence longer than a chunk and caps the blurb', () => {
    const chunks = chunkDocument({ title: 't', sections: [{ text: 'word '.repeat(2000) }] });
    expect(chunks.length).toBeGreaterThanOrEqual(4);
    expect(chunks.every((c) => c.token_count <= CHUNK_TOKENS)).toBe(true);
    expect(chunks[0]!.blurb.split(/\s+/).length).toBeLessThanOrEqual(BLURB_TOKENS + 1);
  });
});

describe('ingestion', () => {
  it('creates, then updates in place, and skips unchanged content', async () => {
    const admin = t.caller(t.adminKey);
    const created = await admin.documents.ingest({ document: doc({ id: 'doc-1' }) });
    expect(created).toEqual({ document_id: 'doc-1', already_existed: false });
    const again = await admin.documents.ingest({ document: doc({ id: 'doc-1' }) });
    expect(again).toEqual({ document_id: 'doc-1', already_existed: true });
    const updated = await admin.documents.ingest({
      document: doc({ id: 'doc-1', sections: [{ text: 'Completely new text about payroll.' }] }),
    });
    expect(updated.already_existed).toBe(true);
    const chunks = await t.deps.db
      .selectFrom('chunks')
      .selectAll()
      .where('document_id', '=', 'doc-1')
      .execute();
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.content).toBe('Completely new text about payroll.');
    const list = await admin.documents.listIngested({});
    expect(list.filter((d) => d.document_id === 'doc-1')).toEqual([
      { document_id: 'doc-1', semantic_id: 'Onboarding guide', link: null },
    ]);
  });

  it('derives the same id from the same content', async () => {
    const admin = t.caller(t.adminKey);
    const first = await admin.documents.ingest({ document: doc({ semantic_identifier: 'Derived' }) });
    const second = await admin.documents.ingest({ document: doc({ semantic_identifier: 'Derived' }) });
    expect(first.document_id).toMatch(/^ingestion_api_[0-9a-f]{32}$/);
    expect(second).toEqual({ document_id: first.document_id, already_existed: true });
    expect(first.already_existed).toBe(false);
  });

  it('finds ingested documents through the exported search service', async () => {
    const admin = t.caller(t.adminKey);
    await admin.documents.ingest({
      document: doc({
        id: 'kube',
        semantic_identifier: 'Kubernetes runbook',
        sections: [
          { text: 'Restart the ingress controller when pods crash.', link: 'https://wiki/kube#restart' },
        ],
      }),
    });
    const actor = await import('../api-keys/api-keys.service.ts').then((m) =>
      m.authenticate({ ctx: t.deps, authorization: `Bearer ${t.adminKey}` }),
    );
    const chunks = await documentsService
      .listIngestedDocuments({ ctx: t.deps })
      .then(() => import('../search/search.service.ts'))
      .then((s) => s.searchChunks({ ctx: t.deps, actor, query: 'ingress controller' }));
    expect(chunks[0]).toMatchObject({
      document_id: 'kube',
      chunk_id: 0,
      semantic_identifier: 'Kubernetes runbook',
      link: 'https://wiki/kube#restart',
      source_type: 'file',
    });
    expect(chunks[0]!.match_highlights[0]).toContain('<hi>ingress</hi>');
  });

  it('deletes ingested documents (204) and answers 404 / 400 as the spec says', async () => {
    const admin = t.caller(t.adminKey);
    await admin.documents.ingest({ document: doc({ id: 'to-delete' }) });
    await admin.documents.deleteIngested({ document_id: 'to-delete' });
    expect(await errorOf(admin.documents.deleteIngested({ document_id: 'to-delete' }))).toMatchObject({
      status: 404,
      error_code: 'DOCUMENT_NOT_FOUND',
    });
    expect(await errorOf(admin.documents.ingest({ document: doc(), cc_pair_id: 999_999 }))).toMatchObject({
      status: 400,
    });
  });
});
