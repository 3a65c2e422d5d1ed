import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';

describe('REST: user groups and users', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  const json = async (res: Response) => ({ status: res.status, body: await res.json() });

  it('runs the group lifecycle with curators at the exact paths', async () => {
    const member = await s.createKey('basic', 'member');
    const curator = await s.createKey('basic', 'to-be-curator');

    const created = await json(
      await s.request('POST', '/api/manage/admin/user-group', {
        key: s.adminKey,
        body: { name: 'support', user_ids: [member.user_id, curator.user_id] },
      }),
    );
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: expect.any(Number), name: 'support', curator_ids: [] });
    const id = created.body.id as number;

    // A basic key is refused, then becomes a curator of this group only.
    expect((await s.request('GET', '/api/manage/admin/user-group', { key: curator.key })).status).toBe(403);
    const promoted = await json(
      await s.request('POST', `/api/manage/admin/user-group/${id}/set-curator`, {
        key: s.adminKey,
        body: { user_id: curator.user_id, is_curator: true },
      }),
    );
    expect(promoted.body.curator_ids).toEqual([curator.user_id]);
    const listed = await json(await s.request('GET', '/api/manage/admin/user-group', { key: curator.key }));
    expect(listed).toMatchObject({ status: 200, body: [{ id, name: 'support' }] });

    const other = await json(
      await s.request('POST', '/api/manage/admin/user-group', { key: s.adminKey, body: { name: 'other' } }),
    );
    expect(
      (
        await s.request('PATCH', `/api/manage/admin/user-group/${other.body.id}`, {
          key: curator.key,
          body: { name: 'taken over' },
        })
      ).status,
    ).toBe(403);
    const patched = await json(
      await s.request('PATCH', `/api/manage/admin/user-group/${id}`, {
        key: curator.key,
        body: { user_ids: [curator.user_id] },
      }),
    );
    expect(patched.status).toBe(200);
    expect(patched.body.users.map((u: { id: string }) => u.id)).toEqual([curator.user_id]);

    expect(
      (await s.request('DELETE', `/api/manage/admin/user-group/${id}`, { key: curator.key })).status,
    ).toBe(403);
    const deleted = await s.request('DELETE', `/api/manage/admin/user-group/${id}`, { key: s.adminKey });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    const again = await json(
      await s.request('DELETE', `/api/manage/admin/user-group/${id}`, { key: s.adminKey }),
    );
    expect(again).toEqual({
      status: 404,
      body: { error_code: 'USER_GROUP_NOT_FOUND', detail: expect.any(String) },
    });
  });

  it('answers errors with {error_code, detail}', async () => {
    const basic = await s.createKey('basic');
    const cases: Array<[string, string, { key?: string; body?: unknown }, number, string]> = [
      ['GET', '/api/manage/admin/user-group', {}, 401, 'UNAUTHENTICATED'],
      ['GET', '/api/manage/users', {}, 401, 'UNAUTHENTICATED'],
      ['GET', '/api/manage/users', { key: basic.key }, 403, 'INSUFFICIENT_PERMISSIONS'],
      [
        'POST',
        '/api/manage/admin/user-group',
        { key: basic.key, body: { name: 'x' } },
        403,
        'INSUFFICIENT_PERMISSIONS',
      ],
      ['POST', '/api/manage/admin/user-group', { key: s.adminKey, body: {} }, 422, 'VALIDATION_ERROR'],
      [
        'POST',
        '/api/manage/admin/user-group',
        { key: s.adminKey, body: { name: 'ghosts', user_ids: ['00000000-0000-4000-8000-000000000009'] } },
        400,
        'INVALID_INPUT',
      ],
      [
        'PATCH',
        '/api/manage/admin/user-group/4242',
        { key: s.adminKey, body: { name: 'x' } },
        404,
        'USER_GROUP_NOT_FOUND',
      ],
    ];
    for (const [method, path, options, status, code] of cases) {
      const res = await s.request(method, path, options);
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(await res.json()).toEqual({ error_code: code, detail: expect.any(String) });
    }
    const users = await json(await s.request('GET', '/api/manage/users', { key: s.adminKey }));
    expect(users.body).toContainEqual({
      id: basic.user_id,
      email: expect.any(String),
      role: 'basic',
      account_type: 'service_account',
      is_active: true,
    });
  });
});
