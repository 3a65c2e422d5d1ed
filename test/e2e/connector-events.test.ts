import { createHmac } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@kas/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeGitHub, type FakeIssue, fakeRepo, startFakeGitHub } from '../fakes/github.ts';
import { serve, stopAllProcesses, tempDir } from '../harness/process.ts';

// A webhook is answered before the source is read (the source is slow here), stored durably, and
// processed by the worker; killing the server between the answer and the processing loses nothing.
const KEY = `svck-${'e'.repeat(43)}`;
const SECRET = 'hook-secret';
let gh: FakeGitHub;
const databases: TestDatabase[] = [];

beforeAll(async () => {
  gh = await startFakeGitHub('acme');
});
afterAll(async () => {
  stopAllProcesses();
  await gh.close();
  for (const database of databases) await database.drop();
});

type Json = Record<string, any>;

describe.each(['pglite', 'postgres'] as const)('queued webhook events on %s', (db) => {
  it('answers before the slow source is read, and an event accepted just before a SIGKILL is indexed after the restart', {
    timeout: 120_000,
  }, async () => {
    const env: Record<string, string> = {
      KAS_DATA_DIR: tempDir(),
      KAS_BOOTSTRAP_ADMIN_KEY: KEY,
      KAS_LOG_LEVEL: 'warn',
      KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
      KAS_CONNECTOR_HEARTBEAT_MS: '200',
      KAS_CONNECTOR_STALE_MS: '1000',
      KAS_RATE_LIMIT_PER_MINUTE: '0',
    };
    if (db === 'postgres') {
      const database = await createTestDatabase('postgres');
      databases.push(database);
      Object.assign(env, database.env);
    }
    const repo = `gadgets-${db}`;
    gh.delayMs = 0;
    gh.repos.push(
      fakeRepo(repo, {
        issues: [
          {
            number: 1,
            title: 'Slow issue',
            body: 'the issue mentions a quokka',
            user: 'octocat',
            state: 'open',
            updated_at: '2026-01-02T00:00:00Z',
            comments: [],
          },
        ],
      }),
    );
    let server = await serve(env, 60_000);
    const call = async (method: string, path: string, body?: unknown, status = 200): Promise<Json> => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      expect(res.status, text).toBe(status);
      return JSON.parse(text) as Json;
    };
    const connector = await call('POST', '/api/manage/admin/connector', {
      name: `events ${db}`,
      source: 'github',
      input_type: 'event',
      access_type: 'public',
      connector_specific_config: { base_url: gh.url, repo_owner: 'acme', repositories: repo },
    });
    const credential = await call('POST', '/api/manage/credential', {
      source: 'github',
      credential_json: { github_access_token: gh.token, github_webhook_secret: SECRET },
    });
    const pairId = (
      await call('PUT', `/api/manage/connector/${connector.id}/credential/${credential.id}`, {
        name: `events ${db}`,
        access_type: 'public',
      })
    ).data as number;
    const until = async (what: string, check: () => Promise<boolean>) => {
      for (let i = 0; i < 300; i++) {
        if (await check()) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out waiting for ${what}`);
    };
    const finds = async (query: string) =>
      (await call('POST', '/api/admin/search', { query, filters: {} })).documents.some(
        (d: Json) => d.semantic_identifier === `acme/${repo}#1: Slow issue`,
      );
    await until('the first index', () => finds('quokka'));

    (gh.repos.find((r) => r.name === repo)?.issues[0] as FakeIssue).body = 'the issue now mentions a numbat';
    gh.delayMs = 3000;
    gh.requests.length = 0;
    const body = JSON.stringify({
      action: 'edited',
      issue: { number: 1 },
      repository: { full_name: `acme/${repo}` },
    });
    const started = performance.now();
    const res = await fetch(`${server.url}/api/manage/connector/${connector.id}/event`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
      },
      body,
    });
    const answeredMs = performance.now() - started;
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toEqual({ success: true, queued: 1 });
    expect(answeredMs).toBeLessThan(2000);
    // The answer came before the (slow) source answered anything (the fake records a request as it answers).
    expect(gh.requests.filter((p) => p.includes(`/${repo}/issues/1`))).toEqual([]);

    // Killed between the answer and the processing (the source takes 3 s to answer).
    server.child.kill('SIGKILL');
    await new Promise((r) => server.child.once('exit', r));
    gh.delayMs = 0;
    server = await serve(env, 60_000);
    await until('the event to be processed after the restart', () => finds('numbat'));
    await until('the queue to drain', async () => {
      const details = await call('GET', `/api/manage/admin/cc-pair/${pairId}`);
      return details.events.pending === 0 && details.events.last_processed !== null;
    });
    const details = await call('GET', `/api/manage/admin/cc-pair/${pairId}`);
    expect(details.events).toMatchObject({ pending: 0, failed: 0 });
  });
});
