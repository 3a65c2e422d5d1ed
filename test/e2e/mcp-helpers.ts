import { identityService } from '@kas/server';
import { expect } from 'vitest';
import type { TestServer } from '../harness/server.ts';

type Json = Record<string, any>;

/**
 * What the MCP tests share: a public document, a document of a private pair of group A, API keys of
 * each role (`basicA` and `curatorA` in group A, `basicB` not), and a person with a personal token.
 */
export async function mcpFixture(s: TestServer) {
  async function ok(method: string, path: string, body?: unknown): Promise<Json> {
    const res = await s.request(method, path, { key: s.adminKey, body });
    const text = await res.text();
    expect(res.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    return text ? (JSON.parse(text) as Json) : {};
  }
  const made = {
    curatorA: await s.createKey('curator', 'curator A'),
    basicA: await s.createKey('basic', 'basic A'),
    basicB: await s.createKey('basic', 'basic B'),
    limited: await s.createKey('limited', 'limited'),
  };
  const groupA = await ok('POST', '/api/manage/admin/user-group', {
    name: 'group A',
    user_ids: [made.curatorA.user_id, made.basicA.user_id],
  });
  await ok('POST', `/api/manage/admin/user-group/${groupA.id}/set-curator`, {
    user_id: made.curatorA.user_id,
    is_curator: true,
  });
  // A private pair of group A (a file connector; its file is never indexed here: no worker).
  const form = new FormData();
  form.append('files', new Blob(['placeholder']), 'placeholder.txt');
  const upload = (await (
    await fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}` },
      body: form,
    })
  ).json()) as Json;
  const access = { access_type: 'private', groups: [groupA.id] };
  const connector = await ok('POST', '/api/manage/admin/connector', {
    name: 'group A files',
    source: 'file',
    input_type: 'load_state',
    connector_specific_config: { file_locations: upload.file_paths, file_names: upload.file_names },
    ...access,
  });
  const credential = await ok('POST', '/api/manage/credential', { source: 'file', credential_json: {} });
  const groupPairId = (
    await ok('PUT', `/api/manage/connector/${connector.id}/credential/${credential.id}`, {
      name: 'group A files',
      ...access,
    })
  ).data as number;
  const privateDoc = 'merger-memo';
  await ok('POST', '/api/svc-api/ingestion', {
    cc_pair_id: groupPairId,
    document: {
      id: privateDoc,
      semantic_identifier: 'Merger memo',
      metadata: { owner: 'legal' },
      sections: [
        { text: 'Confidential: the narwhal merger closes in march.', link: 'https://wiki.example/merger' },
      ],
    },
  });
  const publicDoc = 'kb-hr';
  await ok('POST', '/api/svc-api/ingestion', {
    document: {
      id: publicDoc,
      semantic_identifier: 'Vacation policy',
      sections: [
        {
          text: 'Employees receive 25 vacation days per year. Unused vacation days expire in March.',
          link: 'https://wiki.example/vacation',
        },
      ],
    },
  });
  const [person] = (await ok('PUT', '/api/manage/admin/users', {
    emails: ['pat@corp.example'],
    role: 'basic',
  })) as unknown as Json[];
  const personToken = (
    await identityService.createPersonalToken({
      ctx: s.running.runtime.deps,
      userId: person!.id ?? person!.user_id,
      input: { name: 'mcp' },
    })
  ).token!;
  return {
    curatorA: made.curatorA.key,
    basicA: made.basicA.key,
    basicB: made.basicB.key,
    limited: made.limited.key,
    personUserId: (person!.id ?? person!.user_id) as string,
    personToken,
    groupPairId,
    privateDoc,
    publicDoc,
    ok,
  };
}
