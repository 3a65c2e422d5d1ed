/**
 * Document-access isolation over HTTP: a document restricted to a user (through the source's list and
 * a linked external identity), to a user group, or to an external group is invisible to another user
 * of the same role through every read path — admin search (curators), chat retrieval and its citations,
 * the document endpoints, document sets, agents scoped to documents, and the connector listings.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeConfluence, startFakeConfluence } from '../fakes/confluence.ts';
import { type FakeOidcProvider, startFakeOidcProvider } from '../fakes/oidc-provider.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

type Json = Record<string, any>;
const REFUSED = [403, 404];

describe.each(['pglite', 'postgres'] as const)(
  'document access between users of the same role on %s',
  (db) => {
    let s: TestServer;
    let idp: FakeOidcProvider;
    let wiki: FakeConfluence;
    /** People signed in through OIDC (basic): ann is listed by account, bob through a group, carl by nobody. */
    const person: Record<'ann' | 'bob' | 'carl', string> = { ann: '', bob: '', carl: '' };
    /** API keys: `a` users are members of group A (the curator curates it), `b` users of group B. */
    const key: Record<'curatorA' | 'curatorB' | 'basicA' | 'basicB', string> = {
      curatorA: '',
      curatorB: '',
      basicA: '',
      basicB: '',
    };
    let syncPairId = 0;
    let groupPairId = 0;
    let setId = 0;
    const SYNC_PAGE = 'ocelot vault combination';
    const GROUP_DOC = 'group-only-doc';
    const GROUP_TEXT = 'the narwhal merger closes in march';

    async function call(credential: string | undefined, method: string, path: string, body?: unknown) {
      const res = await s.request(method, path, { key: credential, body });
      const text = await res.text();
      let json: any;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, text, json };
    }

    async function ok(credential: string, method: string, path: string, body?: unknown): Promise<Json> {
      const answer = await call(credential, method, path, body);
      expect(answer.status, `${method} ${path}: ${answer.text}`).toBeLessThan(300);
      return answer.json as Json;
    }

    async function refused(credential: string, method: string, path: string, body?: unknown) {
      const answer = await call(credential, method, path, body);
      expect(REFUSED, `${method} ${path}: ${answer.status} ${answer.text}`).toContain(answer.status);
      expect(Object.keys(answer.json).sort()).toEqual(['detail', 'error_code']);
    }

    /** Everything a chat turn hands back: answer, citations and retrieved documents, as text. */
    async function chat(credential: string, message: string, extra: Json = {}): Promise<string> {
      const session = await ok(credential, 'POST', '/api/chat/create-chat-session', {
        persona_id: extra.persona_id,
      });
      const answer = await call(credential, 'POST', '/api/chat/send-chat-message', {
        chat_session_id: session.chat_session_id,
        message,
        stream: false,
        ...extra.body,
      });
      expect(answer.status, answer.text).toBe(200);
      return answer.text;
    }

    async function adminSearch(credential: string, query: string, filters: Json = {}): Promise<string> {
      const found = await call(credential, 'POST', '/api/admin/search', { query, filters });
      expect(found.status, found.text).toBe(200);
      return found.text;
    }

    async function waitIndexed(pairId: number) {
      for (let i = 0; i < 300; i++) {
        const details = await ok(s.adminKey, 'GET', `/api/manage/admin/cc-pair/${pairId}`);
        const done = ['success', 'completed_with_errors', 'failed', 'canceled'];
        if (done.includes(details.last_index_attempt_status) && !details.indexing) {
          expect(details.last_index_attempt_status).toBe('success');
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`pair ${pairId} was not indexed`);
    }

    async function pair(source: string, config: Json, credential: Json, access: Json) {
      const name = `${source} ${Math.random().toString(36).slice(2, 8)}`;
      const connector = await ok(s.adminKey, 'POST', '/api/manage/admin/connector', {
        name,
        source,
        input_type: 'load_state',
        connector_specific_config: config,
        ...access,
      });
      const cred = await ok(s.adminKey, 'POST', '/api/manage/credential', {
        source,
        credential_json: credential,
      });
      const created = await ok(
        s.adminKey,
        'PUT',
        `/api/manage/connector/${connector.id}/credential/${cred.id}`,
        {
          name,
          ...access,
        },
      );
      return created.data as number;
    }

    beforeAll(async () => {
      idp = await startFakeOidcProvider({
        ann: { email: 'ann@corp.example' },
        bob: { email: 'bob@corp.example' },
        carl: { email: 'carl@corp.example' },
      });
      wiki = await startFakeConfluence();
      wiki.basic.add('svc@corp.example:wiki-token');
      wiki.spaces.set('SEC', { users: [{ accountId: 'acc-ann' }], groups: ['eng-team'] });
      wiki.groups.set('eng-team', [{ accountId: 'acc-bob', email: 'bob@corp.example' }]);
      wiki.pages.set('300', {
        id: '300',
        title: 'Vault',
        space: 'SEC',
        body: `<p>The ${SYNC_PAGE} is kept in the pantry.</p>`,
        ancestors: [],
        modified: new Date('2026-01-01T00:00:00Z'),
        attachments: [],
      });
      s = await startTestServer({
        db,
        worker: true,
        env: {
          KAS_OIDC_ISSUER: idp.issuer,
          KAS_OIDC_AUDIENCE: idp.clientId,
          KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
          KAS_CONNECTOR_HEARTBEAT_MS: '200',
        },
      });
      for (const name of ['ann', 'bob', 'carl'] as const) {
        const idToken = await idp.signIn(name);
        person[name] = (await ok(idToken, 'POST', '/api/user/pats', { name: 'laptop' })).token as string;
      }
      await ok(s.adminKey, 'PUT', '/api/manage/admin/users/external-identities', {
        user_email: 'ann@corp.example',
        source: 'confluence',
        external_id: 'acc-ann',
      });

      const made = {
        curatorA: await s.createKey('curator', 'curator A'),
        curatorB: await s.createKey('curator', 'curator B'),
        basicA: await s.createKey('basic', 'basic A'),
        basicB: await s.createKey('basic', 'basic B'),
      };
      for (const [name, made_] of Object.entries(made)) key[name as keyof typeof key] = made_.key;
      const groupA = await ok(s.adminKey, 'POST', '/api/manage/admin/user-group', {
        name: 'group A',
        user_ids: [made.curatorA.user_id, made.basicA.user_id],
      });
      const groupB = await ok(s.adminKey, 'POST', '/api/manage/admin/user-group', {
        name: 'group B',
        user_ids: [made.curatorB.user_id, made.basicB.user_id],
      });
      for (const [group, curator] of [
        [groupA, made.curatorA],
        [groupB, made.curatorB],
      ] as const)
        await ok(s.adminKey, 'POST', `/api/manage/admin/user-group/${group.id}/set-curator`, {
          user_id: curator.user_id,
          is_curator: true,
        });

      // A private pair of group A: an uploaded file, and a document through the ingestion API.
      const form = new FormData();
      form.append('files', new Blob(['the walrus budget is frozen']), 'walrus.txt');
      const upload = (await (
        await fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
          method: 'POST',
          headers: { authorization: `Bearer ${s.adminKey}` },
          body: form,
        })
      ).json()) as Json;
      groupPairId = await pair(
        'file',
        { file_locations: upload.file_paths, file_names: upload.file_names },
        {},
        { access_type: 'private', groups: [groupA.id] },
      );
      await waitIndexed(groupPairId);
      await ok(s.adminKey, 'POST', '/api/svc-api/ingestion', {
        cc_pair_id: groupPairId,
        document: { id: GROUP_DOC, semantic_identifier: 'Merger memo', sections: [{ text: GROUP_TEXT }] },
      });
      // A sync pair: the Confluence space lists ann's account and the group eng-team (bob).
      syncPairId = await pair(
        'confluence',
        { wiki_base: wiki.url, space: 'SEC' },
        { confluence_username: 'svc@corp.example', confluence_access_token: 'wiki-token' },
        { access_type: 'sync' },
      );
      await waitIndexed(syncPairId);
      // A public document set over both pairs: listing it must not open its documents.
      setId = (
        await ok(s.adminKey, 'POST', '/api/manage/admin/document-set', {
          name: 'everything',
          description: 'both pairs',
          cc_pair_ids: [groupPairId, syncPairId],
          is_public: true,
        })
      ).id as number;
    }, 120_000);

    afterAll(async () => {
      await s?.close();
      await wiki?.close();
      await idp?.close();
    });

    it('shows a source-restricted page to the listed user and the external group member only, in chat', async () => {
      expect(await chat(person.ann, `what is the ${SYNC_PAGE}?`)).toContain('pantry');
      expect(await chat(person.bob, `what is the ${SYNC_PAGE}?`)).toContain('pantry');
      const carl = await chat(person.carl, `what is the ${SYNC_PAGE}?`);
      expect(carl).not.toContain('pantry');
      expect(carl).not.toContain('viewpage.action?pageId=300');
      // Filtered to the document set that holds the page: still nothing.
      const filtered = await chat(person.carl, `where is the ${SYNC_PAGE} kept?`, {
        body: { retrieval_options: { filters: { document_set: ['everything'] } } },
      });
      expect(filtered).not.toContain('pantry');
      expect(filtered).not.toContain('viewpage.action?pageId=300');
      // A basic API key is no one the source lists either.
      expect(await chat(key.basicA, `what is the ${SYNC_PAGE}?`)).not.toContain('pantry');
    });

    it('shows a group document to members only: chat for basic users, admin search for curators', async () => {
      expect(await chat(key.basicA, 'narwhal merger')).toContain('march');
      const outsider = await chat(key.basicB, 'narwhal merger');
      expect(outsider).not.toContain('march');
      expect(outsider).not.toContain(GROUP_DOC);
      expect(await chat(person.carl, 'narwhal merger')).not.toContain('march');

      expect(await adminSearch(key.curatorA, 'narwhal merger')).toContain(GROUP_DOC);
      const other = await adminSearch(key.curatorB, 'narwhal merger');
      expect(other).not.toContain(GROUP_DOC);
      expect(await adminSearch(key.curatorB, 'narwhal', { document_set: ['everything'] })).not.toContain(
        GROUP_DOC,
      );
      // The sync page: curators of either group are not on the source's list (an admin sees it).
      expect(await adminSearch(s.adminKey, SYNC_PAGE)).toContain('pantry');
      expect(await adminSearch(key.curatorA, SYNC_PAGE)).not.toContain('pantry');
      expect(await adminSearch(key.curatorB, SYNC_PAGE)).not.toContain('pantry');
    });

    it('keeps the document endpoints and connector listings to those who manage the pair', async () => {
      const mine = await ok(key.curatorA, 'GET', `/api/svc-api/connector-docs/${groupPairId}`);
      expect(JSON.stringify(mine)).toContain(GROUP_DOC);
      await refused(key.curatorB, 'GET', `/api/svc-api/connector-docs/${groupPairId}`);
      await refused(key.curatorB, 'GET', `/api/svc-api/connector-docs/${syncPairId}`);
      expect((await call(key.curatorA, 'GET', '/api/svc-api/ingestion')).text).toContain(GROUP_DOC);
      const listed = await call(key.curatorB, 'GET', '/api/svc-api/ingestion');
      expect(listed.status).toBe(200);
      expect(listed.text).not.toContain(GROUP_DOC);
      expect(listed.text).not.toContain('pageId=300');
      await refused(key.curatorB, 'DELETE', `/api/svc-api/ingestion/${GROUP_DOC}`);
      await refused(key.curatorB, 'GET', `/api/manage/admin/cc-pair/${groupPairId}`);
      await refused(key.curatorB, 'GET', `/api/manage/admin/cc-pair/${groupPairId}/index-attempts`);
      const pairsOf = async (credential: string) =>
        (
          (await ok(credential, 'GET', '/api/manage/admin/connector/indexing-status')) as unknown as Json[]
        ).map((p) => p.cc_pair_id as number);
      expect(await pairsOf(key.curatorA)).toContain(groupPairId);
      expect(await pairsOf(key.curatorB)).not.toContain(groupPairId);
      expect(await pairsOf(key.curatorB)).not.toContain(syncPairId);
      // Basic users reach none of them.
      for (const path of [
        `/api/svc-api/connector-docs/${groupPairId}`,
        '/api/svc-api/ingestion',
        `/api/manage/admin/cc-pair/${syncPairId}`,
        '/api/manage/admin/connector/indexing-status',
      ])
        expect((await call(key.basicA, 'GET', path)).status).toBe(403);
      // The member curator still finds it: nothing above changed it.
      expect(await adminSearch(key.curatorA, 'narwhal merger')).toContain(GROUP_DOC);
    });

    it('lists document sets without their documents, and scopes no agent to documents one cannot see', async () => {
      const sets = await call(person.carl, 'GET', '/api/manage/document-set');
      expect(sets.status).toBe(200);
      expect(sets.text).not.toContain(GROUP_DOC);
      expect(sets.text).not.toContain('pantry');
      expect(sets.text).not.toContain(GROUP_TEXT);
      expect(setId).toBeGreaterThan(0);

      // An agent scoped to the documents by id: refused, or it retrieves nothing of them.
      const agent = await call(person.carl, 'POST', '/api/persona', {
        name: 'peek',
        description: 'scoped to documents I cannot see',
        system_prompt: '',
        task_prompt: '',
        datetime_aware: false,
        is_public: false,
        document_set_ids: [setId],
        tool_ids: [],
        document_ids: [GROUP_DOC, `${wiki.url}/pages/viewpage.action?pageId=300`],
      });
      if (agent.status === 200) {
        const text = await chat(person.carl, `narwhal merger ${SYNC_PAGE}`, { persona_id: agent.json.id });
        expect(text).not.toContain('march');
        expect(text).not.toContain('pantry');
      } else {
        expect([400, 403, 404], agent.text).toContain(agent.status);
        expect(agent.text).not.toContain('march');
      }
    });
  },
);
