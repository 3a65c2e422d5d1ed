import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

describe.each(['pglite', 'postgres'] as const)('REST: API keys on %s', (db) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ db });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('runs the key lifecycle through the exact spec paths', async () => {
    const created = await s.request('POST', '/api/admin/api-key', {
      key: s.adminKey,
      body: { name: 'robot', role: 'basic' },
    });
    expect(created.status).toBe(200);
    const key = await created.json();
    expect(key).toMatchObject({ api_key_name: 'robot', api_key_role: 'basic' });
    expect(key.api_key).toMatch(/^svck-[A-Za-z0-9_-]{43}$/);

    const list = await s.request('GET', '/api/admin/api-key', { key: s.adminKey });
    expect(list.status).toBe(200);
    const keys = await list.json();
    expect(keys.find((k: { api_key_id: number }) => k.api_key_id === key.api_key_id)).not.toHaveProperty(
      'api_key',
    );

    const patched = await s.request('PATCH', `/api/admin/api-key/${key.api_key_id}`, {
      key: s.adminKey,
      body: { name: 'robot-2', role: 'admin' },
    });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ api_key_name: 'robot-2', api_key_role: 'admin' });
    expect((await s.request('GET', '/api/admin/api-key', { key: key.api_key })).status).toBe(200);

    const regenerated = await s.request('POST', `/api/admin/api-key/${key.api_key_id}/regenerate`, {
      key: s.adminKey,
    });
    expect(regenerated.status).toBe(200);
    const fresh = await regenerated.json();
    expect((await s.request('GET', '/api/admin/api-key', { key: key.api_key })).status).toBe(401);
    expect((await s.request('GET', '/api/admin/api-key', { key: fresh.api_key })).status).toBe(200);

    const deleted = await s.request('DELETE', `/api/admin/api-key/${key.api_key_id}`, { key: s.adminKey });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    const revoked = await s.request('GET', '/api/admin/api-key', { key: fresh.api_key });
    expect(revoked.status).toBe(401);
    expect(await revoked.json()).toEqual({ error_code: 'UNAUTHENTICATED', detail: expect.any(String) });
  });

  it('gives a key personal tokens only while an admin allows it (allow_personal_tokens)', async () => {
    const created = await s.request('POST', '/api/admin/api-key', {
      key: s.adminKey,
      body: { role: 'basic' },
    });
    const key = await created.json();
    expect(key.allow_personal_tokens).toBe(false);
    const mint = () => s.request('POST', '/api/user/pats', { key: key.api_key, body: { name: 'bot' } });
    const refused = await mint();
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS' });

    const curator = await s.createKey('curator');
    const byCurator = await s.request('PATCH', `/api/admin/api-key/${key.api_key_id}`, {
      key: curator.key,
      body: { allow_personal_tokens: true },
    });
    expect(byCurator.status).toBe(403);

    const allowed = await s.request('PATCH', `/api/admin/api-key/${key.api_key_id}`, {
      key: s.adminKey,
      body: { allow_personal_tokens: true },
    });
    expect(await allowed.json()).toMatchObject({ allow_personal_tokens: true });
    const minted = await mint();
    expect(minted.status).toBe(200);
    const { token } = await minted.json();
    expect((await s.request('GET', '/api/me', { key: token })).status).toBe(200);

    await s.request('PATCH', `/api/admin/api-key/${key.api_key_id}`, {
      key: s.adminKey,
      body: { allow_personal_tokens: false },
    });
    const stopped = await s.request('GET', '/api/me', { key: token });
    expect(stopped.status).toBe(401);
    expect(await stopped.json()).toMatchObject({ error_code: 'UNAUTHENTICATED' });
  });

  it('answers every error with {error_code, detail}', async () => {
    const basic = await s.createKey('basic');
    const cases: Array<[string, string, { key?: string; body?: unknown; rawBody?: string }, number, string]> =
      [
        ['GET', '/api/admin/api-key', {}, 401, 'UNAUTHENTICATED'],
        ['GET', '/api/admin/api-key', { key: 'svck-nope' }, 401, 'UNAUTHENTICATED'],
        ['GET', '/api/admin/api-key', { key: basic.key }, 403, 'INSUFFICIENT_PERMISSIONS'],
        [
          'POST',
          '/api/admin/api-key',
          { key: basic.key, body: { role: 'basic' } },
          403,
          'INSUFFICIENT_PERMISSIONS',
        ],
        ['POST', '/api/admin/api-key/1/regenerate', { key: basic.key }, 403, 'INSUFFICIENT_PERMISSIONS'],
        [
          'PATCH',
          '/api/admin/api-key/1',
          { key: basic.key, body: { role: 'admin' } },
          403,
          'INSUFFICIENT_PERMISSIONS',
        ],
        ['DELETE', '/api/admin/api-key/1', { key: basic.key }, 403, 'INSUFFICIENT_PERMISSIONS'],
        ['DELETE', '/api/admin/api-key/424242', { key: s.adminKey }, 404, 'API_KEY_NOT_FOUND'],
        [
          'PATCH',
          '/api/admin/api-key/424242',
          { key: s.adminKey, body: { name: 'x' } },
          404,
          'API_KEY_NOT_FOUND',
        ],
        ['POST', '/api/admin/api-key/424242/regenerate', { key: s.adminKey }, 404, 'API_KEY_NOT_FOUND'],
        [
          'PATCH',
          '/api/admin/api-key/abc',
          { key: s.adminKey, body: { name: 'x' } },
          422,
          'VALIDATION_ERROR',
        ],
        ['DELETE', '/api/admin/api-key/1.5', { key: s.adminKey }, 422, 'VALIDATION_ERROR'],
        [
          'POST',
          '/api/admin/api-key',
          { key: s.adminKey, rawBody: '{"role": "basic",' },
          422,
          'VALIDATION_ERROR',
        ],
        ['POST', '/api/admin/api-key', { key: s.adminKey, body: { role: 'owner' } }, 422, 'VALIDATION_ERROR'],
        [
          'POST',
          '/api/admin/api-key',
          { key: s.adminKey, body: { role: 'basic', name: 12 } },
          422,
          'VALIDATION_ERROR',
        ],
        ['POST', '/api/admin/api-key', { key: s.adminKey, body: [1, 2] }, 422, 'VALIDATION_ERROR'],
        ['GET', '/api/no/such/route', { key: s.adminKey }, 404, 'NOT_FOUND'],
        ['POST', '/api/health', {}, 404, 'NOT_FOUND'],
      ];
    for (const [method, path, options, status, code] of cases) {
      const res = await s.request(method, path, options);
      const body = await res.json();
      expect({ method, path, status: res.status, body }).toEqual({
        method,
        path,
        status,
        body: { error_code: code, detail: expect.any(String) },
      });
      expect(body.detail.length).toBeGreaterThan(3);
    }
  });

  it('GET /api/me describes the caller', async () => {
    const basic = await s.createKey('basic');
    const res = await s.request('GET', '/api/me', { key: basic.key });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      user_id: basic.user_id,
      role: 'basic',
      api_key_id: basic.api_key_id,
      email: expect.stringMatching(/@service-account\.kas$/),
      credential: 'api_key',
    });
    expect((await s.request('GET', '/api/me')).status).toBe(401);
  });

  it('reports which field is wrong', async () => {
    const res = await s.request('POST', '/api/admin/api-key', { key: s.adminKey, body: { role: 'owner' } });
    expect((await res.json()).detail).toMatch(/^role: /);
  });

  it('serves health without a key, the OpenAPI document and the docs page', async () => {
    const health = await s.request('GET', '/api/health');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    const doc = await (await s.request('GET', '/api/openapi.json')).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/admin/api-key',
        '/api/admin/api-key/{api_key_id}',
        '/api/admin/api-key/{api_key_id}/regenerate',
      ]),
    );
    expect(Object.keys(doc.paths['/api/admin/api-key/{api_key_id}'].delete.responses)).toContain('204');
    expect(doc.paths['/api/admin/api-key/{api_key_id}'].delete.responses['200']).toBeUndefined();
    expect(doc.paths['/api/admin/api-key'].get.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/api/health'].get.security).toBeUndefined();
    expect(doc.paths['/api/admin/api-key'].get.responses['401'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ErrorBody',
    });
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const docs = await s.request('GET', '/api/docs');
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger-ui-bundle.js');
    expect((await s.request('GET', '/api/docs/assets/swagger-ui-bundle.js')).status).toBe(200);
    // A key pasted into the page is not kept in the browser's storage.
    expect(await (await s.request('GET', '/api/docs/init.js')).text()).toContain(
      'persistAuthorization: false',
    );
    // One tag per group of operations: no two that differ only in case.
    const tags = new Set<string>();
    for (const operations of Object.values(doc.paths) as Record<string, { tags?: string[] }>[])
      for (const operation of Object.values(operations))
        for (const tag of operation.tags ?? []) tags.add(tag);
    expect(
      [...tags].filter((tag, _, all) =>
        all.some((other) => other !== tag && other.toLowerCase() === tag.toLowerCase()),
      ),
    ).toEqual([]);
  });

  it('describes every operation in the docs page, under tags that differ by more than case', async () => {
    const doc = (await (await s.request('GET', '/api/openapi.json')).json()) as {
      paths: Record<string, Record<string, { description?: string; tags?: string[] }>>;
    };
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ name: `${method} ${path}`, ...operation })),
    );
    expect(operations.filter((operation) => !operation.description?.trim()).map((o) => o.name)).toEqual([]);
    const tags = [...new Set(operations.flatMap((operation) => operation.tags ?? []))];
    const folded = tags.map((tag) => tag.toLowerCase());
    expect(folded.filter((tag, i) => folded.indexOf(tag) !== i)).toEqual([]);
    expect(await (await s.request('GET', '/api/docs/init.js')).text()).toContain(
      'persistAuthorization: false',
    );
  });
});
