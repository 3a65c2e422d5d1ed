/**
 * kas as an MCP server seen by the MCP Inspector's CLI mode (`mcp-inspector --cli <url>/mcp`), the tool
 * people use to try a server by hand: it lists the tools a bearer kas credential may use and calls them
 * with exactly that caller's access; without a credential it is refused.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { mcpFixture } from './mcp-helpers.ts';

type Json = Record<string, any>;

const inspectorPackage = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/inspector/package.json',
);
const inspectorBin = join(dirname(inspectorPackage), 'clients/launcher/build/index.js');

describe('MCP Inspector CLI against kas', () => {
  let s: TestServer;
  let f: Awaited<ReturnType<typeof mcpFixture>>;
  // The inspector keeps its catalogue and stored sign-ins under the home directory: a fresh one per run.
  const home = mkdtempSync(join(tmpdir(), 'kas-inspector-home-'));

  /** Runs the inspector's CLI mode against kas's /mcp and parses what it prints. */
  function inspector(args: string[], credential?: string): Promise<{ code: number; out: Json }> {
    const headerArgs = credential ? ['--header', `Authorization: Bearer ${credential}`] : [];
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [inspectorBin, '--cli', `${s.url}/mcp`, ...args, ...headerArgs],
        { env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') }, timeout: 60_000 },
        (error, stdout, stderr) => {
          const text = stdout.trim() || stderr.trim();
          let out: Json;
          try {
            out = JSON.parse(text) as Json;
          } catch {
            out = { unparsed: text };
          }
          resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, out });
        },
      );
    });
  }

  beforeAll(async () => {
    s = await startTestServer({ db: 'pglite' });
    f = await mcpFixture(s);
  });
  afterAll(async () => {
    await s?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('lists the tools each credential may use', async () => {
    const admin = await inspector(['--method', 'tools/list'], s.adminKey);
    expect(admin.out.tools?.map((t: Json) => t.name).sort()).toEqual(['ask', 'fetch', 'ingest', 'search']);
    const limited = await inspector(['--method', 'tools/list'], f.limited);
    expect(limited.out.tools?.map((t: Json) => t.name)).toEqual(['ask']);
  });

  it('calls search and fetch as the caller, who sees only their documents', async () => {
    const args = ['--method', 'tools/call', '--tool-name', 'search', '--tool-arg', 'query=narwhal merger'];
    const member = await inspector(args, f.basicA);
    expect(member.out.structuredContent?.results?.[0]?.id).toBe(f.privateDoc);
    const outsider = await inspector(args, f.basicB);
    expect(outsider.out.structuredContent?.results?.map((r: Json) => r.id)).not.toContain(f.privateDoc);

    const fetched = await inspector(
      ['--method', 'tools/call', '--tool-name', 'fetch', '--tool-arg', `id=${f.privateDoc}`],
      f.basicA,
    );
    expect(fetched.out.structuredContent).toMatchObject({ id: f.privateDoc, title: 'Merger memo' });
  });

  it('is refused without a credential', async () => {
    const anonymous = await inspector(['--method', 'tools/list']);
    expect(anonymous.out.tools).toBeUndefined();
    expect(JSON.stringify(anonymous.out)).toMatch(/auth/i);
  });
});
