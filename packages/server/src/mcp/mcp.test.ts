import { describe, expect, it } from 'vitest';
import { authenticate } from '../auth/authenticate.ts';
import type { Role } from '../auth/roles.ts';
import * as documentsService from '../documents/documents.service.ts';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as mcpService from './mcp.service.ts';

const t = useTestRuntime();

async function actorOf(role: Role) {
  const { key } = await t.createKey(role);
  return authenticate({ ctx: t.deps, authorization: `Bearer ${key}` });
}

describe('MCP tools', () => {
  it('offers each role the tools of its REST counterparts, and OAuth scopes never above the role', async () => {
    expect(mcpService.toolsFor(await actorOf('limited'))).toEqual(['ask']);
    expect(mcpService.toolsFor(await actorOf('basic'))).toEqual(['search', 'fetch', 'ask']);
    expect(mcpService.toolsFor(await actorOf('curator'))).toEqual(['search', 'fetch', 'ask', 'ingest']);
    expect(mcpService.scopesForRole('limited')).toEqual(['ask']);
    expect(mcpService.scopesForRole('basic')).toEqual(['search', 'ask']);
    expect(mcpService.scopesForRole('admin')).toEqual(['search', 'ask', 'ingest']);
  });

  it('search, fetch and ingest act as the caller, with the ingestion API’s rules', async () => {
    const admin = { ...t.deps, actor: await actorOf('admin') };
    const basic = { ...t.deps, actor: await actorOf('basic') };
    const created = await mcpService.ingest({
      ctx: admin,
      input: {
        document: {
          id: 'mcp-doc',
          semantic_identifier: 'Heron field guide',
          metadata: { team: 'birds' },
          sections: [
            { text: 'Herons wade in shallow water.', link: 'https://wiki.example/herons' },
            { text: 'They nest in colonies.' },
          ],
        },
      },
    });
    expect(created).toEqual({ document_id: 'mcp-doc', already_existed: false });
    await documentsService.syncIndex({ ctx: t.deps, documentIds: ['mcp-doc'] });
    const found = await mcpService.search({ ctx: basic, input: { query: 'herons wade', limit: 10 } });
    expect(found.results[0]).toMatchObject({ id: 'mcp-doc', title: 'Heron field guide' });
    const fetched = await mcpService.fetchDocument({ ctx: basic, input: { id: 'mcp-doc' } });
    expect(fetched).toMatchObject({
      id: 'mcp-doc',
      url: 'https://wiki.example/herons',
      metadata: { team: 'birds', source_type: 'file' },
    });
    expect(fetched.text).toContain('Herons wade');
    expect(fetched.text).toContain('colonies');
    expect(await errorOf(mcpService.fetchDocument({ ctx: basic, input: { id: 'nope' } }))).toMatchObject({
      error_code: 'DOCUMENT_NOT_FOUND',
    });
    // A basic caller has no ingest: refused by role even when called directly.
    expect(
      await errorOf(
        mcpService.ingest({
          ctx: basic,
          input: { document: { semantic_identifier: 'x', sections: [{ text: 'y' }] } },
        }),
      ),
    ).toMatchObject({ error_code: 'INSUFFICIENT_PERMISSIONS' });
  });
});
