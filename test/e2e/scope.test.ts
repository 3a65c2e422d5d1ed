/**
 * The scope rule over HTTP, tried as an attacker would, on both databases: a curator of one group (or of
 * none) reaches nothing of another group's, and every object they may not see answers exactly like an
 * absent one (same status, error_code and detail, the id aside). One regression per defect of issue 21.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenApiService, startFakeOpenApiService } from '../fakes/openapi-service.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

type Json = any;
const NONE = 999999;

describe.each(['pglite', 'postgres'] as const)('scope over HTTP on %s', (db) => {
  let s: TestServer;
  let api: FakeOpenApiService;
  const key = { curatorA: '', curatorB: '', loner: '', memberA: '', outsider: '' };
  let groupA = 0;
  let groupB = 0;

  async function call(credential: string | undefined, method: string, path: string, body?: unknown) {
    const res = await s.request(method, path, { key: credential, body });
    const text = await res.text();
    return { status: res.status, text, json: text ? (JSON.parse(text) as Json) : undefined };
  }
  async function ok(credential: string, method: string, path: string, body?: unknown): Promise<Json> {
    const answer = await call(credential, method, path, body);
    expect(answer.status, `${method} ${path}: ${answer.text}`).toBeLessThan(300);
    return answer.json;
  }
  /** `path(id)` answers for `id` exactly what it answers for an id that does not exist. */
  async function likeAbsent(
    who: string | undefined,
    method: string,
    path: (id: number | string) => string,
    id: number | string,
    body?: (id: number | string) => unknown,
    absentId: number | string = NONE,
  ) {
    const absent = await call(who, method, path(absentId), body?.(absentId));
    const seen = await call(who, method, path(id), body?.(id));
    expect(absent.status, absent.text).toBeGreaterThanOrEqual(400);
    expect(seen.status, `${method} ${path(id)}: ${seen.text}`).toBe(absent.status);
    expect(seen.json).toEqual({
      ...absent.json,
      detail: absent.json.detail.replace(String(absentId), String(id)),
    });
  }
  async function upload(credential: string, text: string): Promise<string> {
    const form = new FormData();
    form.append('files', new Blob([text]), 'note.txt');
    const res = await fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}` },
      body: form,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as Json).file_paths[0];
  }

  beforeAll(async () => {
    api = await startFakeOpenApiService();
    s = await startTestServer({ db, env: { KAS_AUTH_FAILURES_PER_MINUTE: '0' } });
    const made = {
      curatorA: await s.createKey('curator', 'curator A'),
      curatorB: await s.createKey('curator', 'curator B'),
      loner: await s.createKey('curator', 'curator of nothing'),
      memberA: await s.createKey('basic', 'member A'),
      outsider: await s.createKey('basic', 'outsider'),
    };
    for (const [name, made_] of Object.entries(made)) key[name as keyof typeof key] = made_.key;
    groupA = (
      await ok(s.adminKey, 'POST', '/api/manage/admin/user-group', {
        name: 'A',
        user_ids: [made.curatorA.user_id, made.memberA.user_id],
      })
    ).id;
    groupB = (
      await ok(s.adminKey, 'POST', '/api/manage/admin/user-group', {
        name: 'B',
        user_ids: [made.curatorB.user_id],
      })
    ).id;
    for (const [group, curator] of [
      [groupA, made.curatorA],
      [groupB, made.curatorB],
    ] as const)
      await ok(s.adminKey, 'POST', `/api/manage/admin/user-group/${group}/set-curator`, {
        user_id: curator.user_id,
        is_curator: true,
      });
  });
  afterAll(async () => {
    await s?.close();
    await api?.close();
  });

  it("hides a group's action from non-members: GET /api/tool/{id} is 404 like an absent id", async () => {
    const action = await ok(key.curatorA, 'POST', '/api/admin/tool/custom', {
      definition: api.spec(),
      groups: [groupA],
      custom_headers: [{ key: 'X-Api-Key', value: 'secret' }],
    });
    expect((await ok(key.memberA, 'GET', `/api/tool/${action.id}`)).id).toBe(action.id);
    for (const who of [key.outsider, key.curatorB, key.loner])
      await likeAbsent(who, 'GET', (id) => `/api/tool/${id}`, action.id);
    await likeAbsent(key.curatorB, 'DELETE', (id) => `/api/admin/tool/custom/${id}`, action.id);
  });

  it("answers another group's connectors, credentials and pairs exactly like absent ones", async () => {
    const connector = await ok(key.curatorA, 'POST', '/api/manage/admin/connector', {
      name: 'A files',
      source: 'file',
      input_type: 'load_state',
      access_type: 'private',
      groups: [groupA],
      connector_specific_config: { file_locations: [await upload(key.curatorA, 'group A plans')] },
    });
    const credential = await ok(key.curatorA, 'POST', '/api/manage/credential', {
      source: 'file',
      credential_json: {},
      groups: [groupA],
    });
    const pairId = (
      await ok(key.curatorA, 'PUT', `/api/manage/connector/${connector.id}/credential/${credential.id}`, {
        name: 'A pair',
        access_type: 'private',
        groups: [groupA],
      })
    ).data;
    for (const who of [key.curatorB, key.loner]) {
      await likeAbsent(who, 'GET', (id) => `/api/manage/credential/${id}`, credential.id);
      await likeAbsent(who, 'DELETE', (id) => `/api/manage/credential/${id}`, credential.id);
      await likeAbsent(
        who,
        'PATCH',
        (id) => `/api/manage/admin/connector/${id}`,
        connector.id,
        () => ({
          name: 'mine',
        }),
      );
      await likeAbsent(who, 'DELETE', (id) => `/api/manage/admin/connector/${id}`, connector.id);
      await likeAbsent(who, 'GET', (id) => `/api/manage/admin/cc-pair/${id}`, pairId);
      await likeAbsent(
        who,
        'PUT',
        (id) => `/api/manage/admin/cc-pair/${id}/status`,
        pairId,
        () => ({
          status: 'paused',
        }),
      );
      await likeAbsent(who, 'GET', (id) => `/api/svc-api/connector-docs/${id}`, pairId);
    }
    // Nor can a document set name it.
    await likeAbsent(
      key.curatorB,
      'POST',
      () => '/api/manage/admin/document-set',
      pairId,
      (id) => ({ name: `B set ${id}`, cc_pair_ids: [id] }),
    );
    // The unauthenticated webhook endpoint says nothing of a connector to a caller without its secret.
    await likeAbsent(
      undefined,
      'POST',
      (id) => `/api/manage/connector/${id}/event`,
      connector.id,
      () => ({
        zen: 'hello',
      }),
    );
  });

  it("refuses another's upload in a file connector exactly like an absent one", async () => {
    const theirs = await upload(key.curatorA, 'group A salaries');
    const mine = await upload(key.curatorB, 'group B notes');
    const create = (fileId: number | string) => ({
      name: `B files ${fileId}`,
      source: 'file',
      input_type: 'load_state',
      access_type: 'private',
      groups: [groupB],
      connector_specific_config: { file_locations: [mine, fileId] },
    });
    await likeAbsent(
      key.curatorB,
      'POST',
      () => '/api/manage/admin/connector',
      theirs,
      create,
      '00000000-0000-4000-8000-000000000000',
    );
    const { id } = await ok(key.curatorB, 'POST', '/api/manage/admin/connector', {
      ...create(mine),
      connector_specific_config: { file_locations: [mine] },
    });
    await likeAbsent(
      key.curatorB,
      'PATCH',
      () => `/api/manage/admin/connector/${id}`,
      theirs,
      (fileId) => ({ connector_specific_config: { file_locations: [mine, fileId] } }),
      '00000000-0000-4000-8000-000000000000',
    );
  });

  it("keeps public pairs and admins' documents from curators: overwrite and delete answer like absent", async () => {
    await ok(s.adminKey, 'POST', '/api/svc-api/ingestion', {
      document: {
        id: 'handbook',
        semantic_identifier: 'Handbook',
        sections: [{ text: 'the real handbook' }],
      },
    });
    for (const who of [key.loner, key.curatorA]) {
      const overwrite = await call(who, 'POST', '/api/svc-api/ingestion', {
        document: { id: 'handbook', semantic_identifier: 'Handbook', sections: [{ text: 'forged' }] },
      });
      expect(overwrite.status, overwrite.text).toBe(403);
      await likeAbsent(
        who,
        'DELETE',
        (id) => `/api/svc-api/ingestion/${id}`,
        'handbook',
        undefined,
        'no-such-doc',
      );
      expect((await ok(who, 'GET', '/api/svc-api/ingestion')).map((d: Json) => d.document_id)).not.toContain(
        'handbook',
      );
    }
    const kept = await ok(s.adminKey, 'GET', '/api/svc-api/ingestion');
    expect(kept.find((d: Json) => d.document_id === 'handbook')).toMatchObject({ semantic_id: 'Handbook' });
  });
});
