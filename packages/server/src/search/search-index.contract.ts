import { beforeAll, describe, expect, it } from 'vitest';
import { type Actor, apiKeyActor } from '../auth/roles.ts';
import type { IngestedDocument } from '../documents/documents.schemas.ts';
import * as documentsService from '../documents/documents.service.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { createPostgresSearchIndex } from './postgres.ts';
import * as searchRepository from './search.repository.ts';
import * as searchService from './search.service.ts';
import type { SearchHit } from './search-index.ts';

type Doc = Omit<IngestedDocument, 'doc_updated_at' | 'metadata'> & {
  doc_updated_at?: string;
  metadata?: Record<string, string | string[]>;
};

const fixtures = {
  kube: {
    id: 'pub-kube',
    semantic_identifier: 'Kubernetes runbook',
    sections: [
      { text: 'Restart the ingress controller when pods crash.', link: 'https://wiki/kube#restart' },
      { text: 'Check the node pool before scaling.', link: 'https://wiki/kube#scale' },
    ],
    source: 'confluence',
    metadata: { team: 'platform', env: ['prod', 'staging'] },
    doc_updated_at: '2024-06-01T00:00:00Z',
  },
  ingressTitle: {
    id: 'pub-ingress-title',
    semantic_identifier: 'Ingress guide',
    sections: [{ text: 'Notes about networking, load balancers and ingress.' }],
    doc_updated_at: '2024-05-01T00:00:00Z',
  },
  fox: {
    id: 'pub-fox',
    semantic_identifier: 'Animals',
    sections: [{ text: 'The quick brown fox jumps over the lazy dog.' }],
    source: 'web',
    doc_updated_at: '2024-01-01T00:00:00Z',
  },
  fox2: {
    id: 'pub-fox2',
    semantic_identifier: 'More animals',
    sections: [{ text: 'A brown dog sleeps. A quick cat runs.' }],
    source: 'web',
    doc_updated_at: '2024-02-01T00:00:00Z',
  },
  payroll: {
    id: 'pub-payroll',
    semantic_identifier: 'Payroll calendar',
    sections: [{ text: 'Salaries are paid on the last business day. Expense reports close on the fifth.' }],
    metadata: { team: 'finance' },
    doc_updated_at: '2023-01-01T00:00:00Z',
  },
  secret: {
    id: 'priv-user',
    semantic_identifier: 'Secret merger plan',
    sections: [{ text: 'Project falcon acquires a competitor. Ingress of cash expected.' }],
    doc_updated_at: '2024-07-01T00:00:00Z',
  },
  groupDoc: {
    id: 'priv-group',
    semantic_identifier: 'Group roadmap',
    sections: [{ text: 'Falcon roadmap for the platform group.' }],
    doc_updated_at: '2024-07-02T00:00:00Z',
  },
} satisfies Record<string, Doc>;

/**
 * The behaviour every SearchIndex implementation must have, exercised through the services the API
 * uses. `env` selects the implementation (see `create-search-index.ts`).
 */
export function searchIndexContract(
  name: string,
  env: () => Promise<Record<string, string>> | Record<string, string>,
) {
  describe(`search index contract: ${name}`, () => {
    const t = useTestRuntime(env);
    let admin: Actor;
    let userA: Actor;
    let userB: Actor;
    let userC: Actor;

    const actorOf = (k: { user_id: string; api_key_id: number }, role: Actor['role'] = 'basic'): Actor =>
      apiKeyActor({ user_id: k.user_id, api_key_id: k.api_key_id, role });
    const ingest = (document: Doc, cc_pair_id?: number) =>
      documentsService.ingestDocument({
        ctx: t.deps,
        input: {
          document: {
            ...document,
            doc_updated_at: document.doc_updated_at ? new Date(document.doc_updated_at) : undefined,
          },
          cc_pair_id,
        },
      });
    const ids = async (actor: Actor, query: string, filters: searchService.ChunkSearchFilters = {}) => {
      const chunks = await searchService.searchChunks({ ctx: t.deps, actor, query, filters, limit: 50 });
      return [...new Set(chunks.map((c) => c.document_id))];
    };

    beforeAll(async () => {
      const a = await t.createKey('basic', 'user a');
      const b = await t.createKey('basic', 'user b');
      const c = await t.createKey('basic', 'user c');
      const adminKey = await t.createKey('admin', 'search admin');
      [userA, userB, userC, admin] = [actorOf(a), actorOf(b), actorOf(c), actorOf(adminKey, 'admin')];

      const group = await t.deps.db
        .insertInto('user_groups')
        .values({ name: 'platform' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await t.deps.db
        .insertInto('user_group_members')
        .values({ group_id: group.id, user_id: c.user_id })
        .execute();

      const privateUser = await documentsService.createCcPair({
        ctx: t.deps,
        input: { name: 'a private drive', access_type: 'private', creator_id: a.user_id },
      });
      const privateGroup = await documentsService.createCcPair({
        ctx: t.deps,
        input: { name: 'group wiki', access_type: 'private', group_ids: [group.id] },
      });
      const finance = await documentsService.createCcPair({
        ctx: t.deps,
        input: { name: 'finance share', access_type: 'public' },
      });
      for (const key of ['kube', 'ingressTitle', 'fox', 'fox2'] as const) await ingest(fixtures[key]);
      await ingest(fixtures.payroll, finance.cc_pair_id);
      await ingest(fixtures.secret, privateUser.cc_pair_id);
      await ingest(fixtures.groupDoc, privateGroup.cc_pair_id);
      await t.caller(t.adminKey).documentSets.create({ name: 'Finance', cc_pair_ids: [finance.cc_pair_id] });
      await t.caller(t.adminKey).documentSets.create({ name: 'Hidden set', is_public: false });
    });

    it('finds by keyword and ranks a title match first', async () => {
      const found = await ids(admin, 'ingress');
      expect(found[0]).toBe('pub-ingress-title');
      expect(found).toContain('pub-kube');
    });

    it('returns chunks with their section link, blurb, metadata and highlights', async () => {
      const [chunk] = await searchService.searchChunks({
        ctx: t.deps,
        actor: admin,
        query: 'node pool',
        limit: 5,
      });
      expect(chunk).toMatchObject({
        document_id: 'pub-kube',
        semantic_identifier: 'Kubernetes runbook',
        source_type: 'confluence',
        link: 'https://wiki/kube#restart',
        metadata: { team: 'platform', env: ['prod', 'staging'] },
        updated_at: '2024-06-01T00:00:00.000Z',
      });
      expect(chunk!.score).toBeGreaterThan(0);
      expect(chunk!.blurb).toContain('Restart the ingress controller');
      expect(chunk!.match_highlights.join(' ')).toContain('<hi>node</hi>');
    });

    it('returns stored rows with the ranking only as a lookup would give them', async () => {
      const request = { query: 'ingress', filters: {}, access: { all: true } as const, limit: 10 };
      // The index kept in the database, both ways; other indexes as configured.
      const indexes =
        t.deps.search.kind === 'postgres'
          ? [true, false].map((rowsWithRanking) => createPostgresSearchIndex(t.deps.db, { rowsWithRanking }))
          : [t.deps.search];
      const withoutRows = (hits: SearchHit[]) => hits.map(({ row: _, ...hit }) => hit);
      for (const index of indexes) {
        const all = await index.search({ ...request, rows: {} });
        const best = await index.search({ ...request, rows: { perDocument: 1 } });
        expect(all.length).toBeGreaterThan(1);
        expect(withoutRows(best)).toEqual(withoutRows(all));
        for (const hit of [...all, ...best].filter((h) => h.row)) {
          const [looked] = await searchRepository.loadChunks(t.deps.db, [hit], { all: true });
          expect(hit.row).toEqual(looked);
        }
        if ('rowsWithRanking' in index && index.rowsWithRanking) {
          // Every hit's row, or the first document's best only.
          expect(all.every((h) => h.row)).toBe(true);
          expect(best.filter((h) => h.row).map((h) => h.document_id)).toEqual([best[0]!.document_id]);
        } else {
          expect([...all, ...best].filter((h) => h.row)).toEqual([]);
        }
      }
      for (const index of indexes) if (index !== t.deps.search) await index.close?.();
    });

    it('understands web-search syntax: phrases, exclusions and or', async () => {
      expect(await ids(admin, 'quick brown')).toEqual(expect.arrayContaining(['pub-fox', 'pub-fox2']));
      expect(await ids(admin, '"quick brown"')).toEqual(['pub-fox']);
      expect(await ids(admin, 'brown -cat')).toEqual(['pub-fox']);
      expect((await ids(admin, 'salaries or kubernetes')).sort()).toEqual(['pub-kube', 'pub-payroll']);
    });

    it('matches prefixes and tolerates typos', async () => {
      expect(await ids(admin, 'kubern')).toContain('pub-kube');
      expect(await ids(admin, 'kubernetas')).toContain('pub-kube');
      expect(await ids(admin, 'salaryes')).toContain('pub-payroll');
      // Two neighbouring letters swapped is one typo, as any other (trigrams alone miss these).
      expect((await ids(admin, 'borwn')).sort()).toEqual(['pub-fox', 'pub-fox2']);
      expect(await ids(admin, 'qucik dog')).toContain('pub-fox');
      if (t.deps.search.kind === 'postgres') {
        // Callers that relax the query themselves (chat) can skip the fallbacks' extra queries.
        const exactOnly = await searchService.searchChunks({
          ctx: t.deps,
          actor: admin,
          query: 'kubernetas',
          fallbacks: false,
        });
        expect(exactOnly).toEqual([]);
      }
    });

    it('applies source, document set, time and tag filters', async () => {
      expect(await ids(admin, 'ingress', { source_type: ['confluence'] })).toEqual(['pub-kube']);
      expect(await ids(admin, 'salaries', { document_set: ['Finance'] })).toEqual(['pub-payroll']);
      expect(await ids(admin, 'ingress', { document_set: ['Finance'] })).toEqual([]);
      // A set that does not exist would match nothing: refused, naming it.
      await expect(ids(admin, 'ingress', { document_set: ['Finance', 'No such set'] })).rejects.toMatchObject(
        {
          error_code: 'INVALID_INPUT',
          detail: expect.stringMatching(/^No document set named "No such set" among the sets you can search/),
        },
      );
      const recent = await ids(admin, 'ingress', { time_cutoff: '2024-05-15T00:00:00Z' });
      expect(recent.sort()).toEqual(['priv-user', 'pub-kube']);
      expect(await ids(admin, 'ingress', { tags: [{ tag_key: 'env', tag_value: 'staging' }] })).toEqual([
        'pub-kube',
      ]);
      expect(await ids(admin, '', { tags: [{ tag_key: 'team', tag_value: 'finance' }] })).toEqual([
        'pub-payroll',
      ]);
      expect(await ids(admin, 'brown', { document_ids: ['pub-fox2'] })).toEqual(['pub-fox2']);
    });

    it('never shows a private document to a user without access', async () => {
      for (const query of ['falcon', 'ingress', 'secret merger', '', 'falcon or roadmap', 'falcn']) {
        const seen = await ids(userB, query);
        expect(seen).not.toContain('priv-user');
        expect(seen).not.toContain('priv-group');
      }
      expect(await ids(userA, 'falcon')).toEqual(['priv-user']);
      expect(await ids(userC, 'falcon')).toEqual(['priv-group']);
      expect((await ids(admin, 'falcon')).sort()).toEqual(['priv-group', 'priv-user']);
      expect(await ids(userB, 'ingress')).toEqual(expect.arrayContaining(['pub-kube', 'pub-ingress-title']));
    });

    it('refuses a document set the user cannot see as an absent one, in the same words', async () => {
      const hidden = await ids(userB, '', { document_set: ['Hidden set'] }).catch((error: unknown) => error);
      const absent = await ids(userB, '', { document_set: ['No such set'] }).catch((error: unknown) => error);
      expect(hidden).toMatchObject({ error_code: 'INVALID_INPUT' });
      expect((hidden as { detail: string }).detail.replace('Hidden set', 'X')).toBe(
        (absent as { detail: string }).detail.replace('No such set', 'X'),
      );
    });

    it('lists the most recent documents for an empty query', async () => {
      const recent = await ids(userB, '');
      expect(recent[0]).toBe('pub-kube');
      expect(recent).toHaveLength(5);
    });

    it('re-indexes an updated document and forgets the old text', async () => {
      await ingest({ ...fixtures.fox, sections: [{ text: 'A slow green turtle swims.' }] });
      expect(await ids(admin, 'turtle')).toEqual(['pub-fox']);
      expect(await ids(admin, '"quick brown"')).toEqual([]);
    });

    it('removes deleted documents', async () => {
      await documentsService.deleteIngestedDocument({
        ctx: { ...t.deps, actor: admin },
        documentId: 'pub-fox2',
      });
      expect(await ids(admin, 'cat')).toEqual([]);
    });

    it('is rebuilt from Postgres by reindex', async () => {
      const { documents } = await documentsService.reindexAll({ ctx: t.deps, batchSize: 2 });
      expect(documents).toBe(6);
      expect(await ids(admin, 'turtle')).toEqual(['pub-fox']);
      expect(await ids(userB, 'falcon')).toEqual([]);
      expect(await ids(userA, 'falcon')).toEqual(['priv-user']);
    });
  });
}
