import { createHmac } from 'node:crypto';
import { ApiError, createKasClient, fileConnectorConfig } from '@kas/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeGitHub, fakeRepo, startFakeGitHub } from '../fakes/github.ts';
import { type FakeSlack, startFakeSlack } from '../fakes/slack.ts';
import { minimalDocx, minimalPdf, zip } from '../harness/office-files.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

let s: TestServer;
let gh: FakeGitHub;
let slack: FakeSlack;

beforeAll(async () => {
  s = await startTestServer({
    worker: true,
    env: { KAS_OUTBOUND_ALLOWLIST: '127.0.0.1', KAS_CONNECTOR_HEARTBEAT_MS: '200' },
  });
  gh = await startFakeGitHub('acme');
  slack = await startFakeSlack();
});
afterAll(async () => {
  await gh.close();
  await slack.close();
  await s.close();
});

type Json = Record<string, any>;

async function json(res: Response, status = 200): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as Json;
}

async function pairFor(source: string, config: Json, credential: Json, inputType = 'load_state') {
  const name = `${source} ${Math.random().toString(36).slice(2, 8)}`;
  const connector = await json(
    await s.request('POST', '/api/manage/admin/connector', {
      key: s.adminKey,
      body: { name, source, input_type: inputType, access_type: 'public', connector_specific_config: config },
    }),
  );
  const cred = await json(
    await s.request('POST', '/api/manage/credential', {
      key: s.adminKey,
      body: { source, credential_json: credential },
    }),
  );
  const pair = await json(
    await s.request('PUT', `/api/manage/connector/${connector.id}/credential/${cred.id}`, {
      key: s.adminKey,
      body: { name, access_type: 'public' },
    }),
  );
  return { connectorId: connector.id as number, pairId: pair.data as number };
}

async function indexed(pairId: number): Promise<Json> {
  for (let i = 0; i < 200; i++) {
    const details = await json(
      await s.request('GET', `/api/manage/admin/cc-pair/${pairId}`, { key: s.adminKey }),
    );
    const done = ['success', 'completed_with_errors', 'failed', 'canceled'];
    if (done.includes(details.last_index_attempt_status) && !details.indexing) return details;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`pair ${pairId} was not indexed`);
}

async function search(query: string): Promise<Json[]> {
  const res = await s.request('POST', '/api/admin/search', { key: s.adminKey, body: { query, filters: {} } });
  return (await json(res)).documents as Json[];
}

describe('file connector over HTTP', () => {
  it('uploads text, Markdown, HTML, PDF and a zip with .onyx_metadata.json, then indexes them with their metadata', async () => {
    const form = new FormData();
    form.append('files', new Blob(['the aardvark eats ants at night']), 'animals.txt');
    form.append('files', new Blob(['# Runbook\nRestart the gizmo service twice.']), 'runbook.md');
    form.append(
      'files',
      new Blob([
        '<html><head><title>Holiday policy</title></head><body><p>Twenty days of leave per year.</p></body></html>',
      ]),
      'policy.html',
    );
    form.append(
      'files',
      new Blob([new Uint8Array(minimalPdf(['The launch code is MANGO-42.']))]),
      'launch.pdf',
    );
    const bundle = zip([
      { name: 'notes/design.md', data: 'Design of the hovercraft ballast system.' },
      {
        name: 'notes/minutes.docx',
        data: minimalDocx(['Minutes: the committee approved the ferret budget.']),
      },
      { name: 'notes/tool.exe', data: 'MZ binary' },
      {
        name: '.onyx_metadata.json',
        data: JSON.stringify([
          {
            filename: 'notes/design.md',
            link: 'https://wiki.example/design',
            file_display_name: 'Hovercraft design',
            primary_owners: ['alice@acme.test'],
            doc_updated_at: '2025-05-01T00:00:00Z',
            team: 'marine',
          },
        ]),
      },
    ]);
    form.append('files', new Blob([new Uint8Array(bundle)]), 'bundle.zip');
    const upload = await json(
      await fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.adminKey}` },
        body: form,
      }),
    );
    expect(upload.file_names).toEqual([
      'animals.txt',
      'runbook.md',
      'policy.html',
      'launch.pdf',
      'notes/design.md',
      'notes/minutes.docx',
    ]);
    expect(upload.file_paths).toHaveLength(6);
    expect(upload.zip_metadata_file_id).toEqual(expect.any(String));

    const { pairId } = await pairFor(
      'file',
      {
        file_locations: upload.file_paths,
        file_names: upload.file_names,
        zip_metadata_file_id: upload.zip_metadata_file_id,
      },
      {},
    );
    const details = await indexed(pairId);
    expect(details).toMatchObject({ last_index_attempt_status: 'success', num_docs_indexed: 6 });
    const [design] = await search('hovercraft ballast');
    expect(design).toMatchObject({
      semantic_identifier: 'Hovercraft design',
      link: 'https://wiki.example/design',
      metadata: { team: 'marine' },
    });
    expect(design?.updated_at).toContain('2025-05-01');
    expect((await search('MANGO-42'))[0]?.semantic_identifier).toBe('launch.pdf');
    expect((await search('ferret budget'))[0]?.semantic_identifier).toBe('minutes.docx');
    expect((await search('twenty days leave'))[0]?.semantic_identifier).toBe('Holiday policy');
  }, 60_000);

  it('refuses other file types (415), a broken zip (400) and callers without a key (401)', async () => {
    const post = (name: string, data: string, key: string | null = s.adminKey) => {
      const form = new FormData();
      form.append('files', new Blob([data]), name);
      return fetch(`${s.url}/api/manage/admin/connector/file/upload`, {
        method: 'POST',
        headers: key ? { authorization: `Bearer ${key}` } : {},
        body: form,
      });
    };
    expect((await json(await post('tool.exe', 'MZ'), 415)).error_code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect((await json(await post('broken.zip', 'not a zip'), 400)).detail).toContain('not a readable zip');
    expect((await post('a.txt', 'hello', null)).status).toBe(401);
    const basic = await s.createKey('basic');
    expect((await post('a.txt', 'hello', basic.key)).status).toBe(403);
  });
});

describe('file connector through the SDK', () => {
  it('uploads with connectors.uploadFiles, configures with fileConnectorConfig and waits for indexing', async () => {
    const kas = createKasClient({ baseUrl: s.url, apiKey: s.adminKey });
    const upload = await kas.connectors.uploadFiles([
      { name: 'glossary.md', content: 'A quoll is a carnivorous marsupial.' },
      { name: 'faq.txt', content: new TextEncoder().encode('Questions about the tuatara.') },
    ]);
    expect(upload).toMatchObject({ file_names: ['glossary.md', 'faq.txt'], zip_metadata_file_id: null });
    const { id } = await kas.connectors.create({
      name: 'sdk files',
      source: 'file',
      input_type: 'load_state',
      access_type: 'public',
      connector_specific_config: fileConnectorConfig(upload),
    });
    const credential = await kas.connectors.credentials.create({ source: 'file', credential_json: {} });
    const pair = await kas.connectors.pairs.create(id, credential.id, {
      name: 'sdk files',
      access_type: 'public',
    });
    const done = await kas.connectors.pairs.waitForIndexing(pair, { intervalMs: 100 });
    expect(done).toMatchObject({ last_index_attempt_status: 'success', num_docs_indexed: 2 });
    const refused = await kas.connectors
      .uploadFiles([{ name: 'x.exe', content: 'MZ' }])
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(415);
  }, 30_000);
});

describe('connector events over HTTP', () => {
  it('verifies a GitHub webhook against the body exactly as sent and re-indexes the issue', async () => {
    gh.repos = [
      fakeRepo('tools', {
        issues: [
          {
            number: 7,
            title: 'Flaky test',
            body: 'the flaky test fails on tuesdays',
            user: 'octocat',
            state: 'open',
            updated_at: '2026-01-02T00:00:00Z',
            comments: [],
          },
        ],
      }),
    ];
    const secret = 'webhook-secret';
    const { connectorId, pairId } = await pairFor(
      'github',
      { base_url: gh.url, repo_owner: 'acme', repositories: 'tools' },
      { github_access_token: gh.token, github_webhook_secret: secret },
      'event',
    );
    await indexed(pairId);
    (gh.repos[0]?.issues[0] as { body: string }).body = 'the flaky test fails when the moon is full';
    // Formatted as GitHub sends it: re-serialising the parsed body would not match the signature.
    const body = JSON.stringify(
      { action: 'edited', issue: { number: 7 }, repository: { full_name: 'acme/tools' } },
      null,
      2,
    );
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const path = `/api/manage/connector/${connectorId}/event`;
    const bad = await s.request('POST', path, {
      rawBody: body,
      headers: { 'x-github-event': 'issues', 'x-hub-signature-256': 'sha256=00' },
    });
    const refused = await json(bad, 404);
    expect(refused.error_code).toBe('CONNECTOR_NOT_FOUND');
    const ok = await s.request('POST', path, {
      rawBody: body,
      headers: { 'x-github-event': 'issues', 'x-hub-signature-256': signature },
    });
    expect(await json(ok)).toEqual({ success: true, queued: 1 });
    for (let i = 0; i < 100 && !(await search('moon is full')).length; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect((await search('moon is full'))[0]?.semantic_identifier).toBe('acme/tools#7: Flaky test');
    // A wrong signature answers exactly as an absent connector does: nothing about the connector leaks.
    const missing = await s.request('POST', '/api/manage/connector/999999/event', {
      rawBody: body,
      headers: { 'x-github-event': 'issues', 'x-hub-signature-256': 'sha256=00' },
    });
    expect(await json(missing, 404)).toEqual({
      ...refused,
      detail: refused.detail.replace(String(connectorId), '999999'),
    });
  }, 30_000);

  it("answers Slack's url_verification challenge", async () => {
    const secret = 'slack-secret';
    slack.channels = [];
    const { connectorId } = await pairFor(
      'slack',
      { base_url: slack.url },
      { slack_bot_token: slack.token, slack_signing_secret: secret },
      'event',
    );
    const body =
      '{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}';
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await s.request('POST', `/api/manage/connector/${connectorId}/event`, {
      rawBody: body,
      headers: {
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
      },
    });
    expect(await json(res)).toMatchObject({
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
    });
  });

  it('documents the upload and the event endpoint (no API key) in the OpenAPI document', async () => {
    const doc = await json(await fetch(`${s.url}/api/openapi.json`));
    const upload = doc.paths['/api/manage/admin/connector/file/upload'].post;
    expect(upload.requestBody.content['multipart/form-data']).toBeDefined();
    const event = doc.paths['/api/manage/connector/{connector_id}/event'].post;
    expect(event.security).toBeUndefined();
    expect(event.requestBody.content['application/json']).toBeDefined();
  });
});
