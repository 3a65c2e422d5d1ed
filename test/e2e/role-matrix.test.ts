/**
 * The role matrix, generated from the contract: every operation of /api/openapi.json is called with no
 * key, an unknown key, an expired key, a revoked key and a key of each role, and the answer must be
 * 401, 403 or neither exactly as the operation's `x-kas-min-role` declares.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

const RANK: Record<string, number> = { none: -2, limited: -1, basic: 0, curator: 1, admin: 2 };
const ROLES = ['limited', 'basic', 'curator', 'admin'] as const;

interface Operation {
  method: string;
  path: string;
  minRole: string;
  readsKey: boolean;
  bodyType?: string;
  parameters: { in: string; name: string; schema: { type?: string; format?: string } }[];
}

function operationsOf(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths))
    for (const [method, op] of Object.entries<any>(item))
      out.push({
        method: method.toUpperCase(),
        path,
        minRole: op['x-kas-min-role'],
        readsKey: JSON.stringify(op.security ?? []).includes('bearerAuth'),
        bodyType: Object.keys(op.requestBody?.content ?? {})[0],
        parameters: op.parameters ?? [],
      });
  return out;
}

/** A request that names resources that do not exist, so no call changes anything that matters. */
function requestFor(op: Operation): { path: string; body?: string; contentType?: string } {
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const schema = op.parameters.find((p) => p.name === name)?.schema ?? {};
    return JSON.stringify(schema).includes('integer') ? '999999' : '00000000-0000-4000-8000-000000000000';
  });
  if (op.bodyType === 'multipart/form-data') {
    const boundary = 'kasrolematrix';
    return {
      path,
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`,
    };
  }
  if (op.bodyType) return { path, body: '{}', contentType: 'application/json' };
  return { path };
}

describe.each(['pglite', 'postgres'] as const)('the role matrix on %s', (db) => {
  let s: TestServer;
  let operations: Operation[];
  const keys: Record<string, string | undefined> = {};

  beforeAll(async () => {
    s = await startTestServer({ db, env: { KAS_AUTH_FAILURES_PER_MINUTE: '0' } });
    operations = operationsOf(await (await s.request('GET', '/api/openapi.json')).json());
    for (const role of ROLES) keys[role] = (await s.createKey(role)).key;
    keys.none = undefined;
    keys.unknown = `svck-${'Q'.repeat(43)}`;
    const revoked = await s.createKey('admin', 'revoked');
    expect(
      (await s.request('DELETE', `/api/admin/api-key/${revoked.api_key_id}`, { key: s.adminKey })).status,
    ).toBe(204);
    keys.revoked = revoked.key;
    const expired = await s.createKey('admin', 'expired');
    await sql`update api_keys set expires_at = now() - interval '1 minute' where id = ${expired.api_key_id}`.execute(
      s.running.runtime.deps.db,
    );
    keys.expired = expired.key;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('declares a least role on every operation', () => {
    expect(operations.length).toBeGreaterThan(80);
    for (const op of operations) expect(Object.keys(RANK), `${op.method} ${op.path}`).toContain(op.minRole);
    // Operations callable without a key are exactly those the document does not require a key for.
    for (const op of operations)
      expect(op.minRole === 'none', `${op.method} ${op.path}`).toBe(
        !op.readsKey || op.path === '/api/chat/get-chat-session/{session_id}',
      );
    expect(operations.filter((op) => op.minRole === 'none').length).toBeLessThan(6);
  });

  it('answers 401, 403 or neither exactly as each operation declares', { timeout: 120_000 }, async () => {
    const wrong: string[] = [];
    let calls = 0;
    for (const op of operations) {
      const { path, body, contentType } = requestFor(op);
      for (const [who, key] of Object.entries(keys)) {
        const res = await s.request(op.method, path, {
          key,
          rawBody: body,
          headers: contentType ? { 'content-type': contentType } : {},
        });
        const text = await res.text();
        calls++;
        let expected: 'unauthenticated' | 'forbidden' | 'allowed';
        // Optionally authenticated reads (a publicly shared chat) need no key only for what is shared: the
        // request below names no shared resource, so without a key they ask for one.
        if (who === 'none') expected = op.minRole === 'none' && !op.readsKey ? 'allowed' : 'unauthenticated';
        else if (!(who in RANK)) expected = op.readsKey ? 'unauthenticated' : 'allowed';
        else expected = RANK[who]! < RANK[op.minRole]! ? 'forbidden' : 'allowed';
        const ok =
          expected === 'unauthenticated'
            ? res.status === 401
            : expected === 'forbidden'
              ? res.status === 403
              : res.status !== 401 && res.status !== 403 && res.status < 500;
        if (!ok)
          wrong.push(
            `${op.method} ${op.path} as ${who}: expected ${expected}, got ${res.status} ${text.slice(0, 160)}`,
          );
        if (res.status === 401 || res.status === 403)
          expect(Object.keys(JSON.parse(text)).sort(), `${op.method} ${op.path}`).toEqual([
            'detail',
            'error_code',
          ]);
      }
    }
    expect(wrong, wrong.join('\n')).toEqual([]);
    const shared = await s.request(
      'GET',
      '/api/chat/get-chat-session/00000000-0000-4000-8000-000000000000?is_shared=true',
    );
    expect(shared.status).toBe(404);
    expect(calls).toBe(operations.length * 8);
  });
});
