import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, serve, stopAllProcesses, tempDir } from '../harness/process.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'packages/rest-bridge/src/cli.ts');
const run = promisify(execFile);
const KEY = `svck-${'e'.repeat(43)}`;

afterAll(stopAllProcesses);

describe('kas eval', () => {
  it('measures admin search and cited chat answers of a running service through its API', async () => {
    const running = await serve({ KAS_DATA_DIR: tempDir(), KAS_BOOTSTRAP_ADMIN_KEY: KEY }, 60_000);
    const pages = [
      ['vacuum', 'Routine vacuuming', 'VACUUM reclaims the storage occupied by dead tuples in a table.'],
      ['index', 'Creating indexes', 'CREATE INDEX CONCURRENTLY builds an index without locking out writes.'],
      ['dump', 'pg_dump', 'The pg_dump program writes a consistent archive of one database.'],
    ];
    for (const [id, title, text] of pages) {
      const res = await fetch(`${running.url}/api/svc-api/ingestion`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ document: { id, semantic_identifier: title, sections: [{ text }] } }),
      });
      expect(res.status).toBe(200);
    }
    const dir = tempDir();
    const golden = join(dir, 'golden.jsonl');
    writeFileSync(
      golden,
      [
        '# questions with the documents that answer them',
        JSON.stringify({ question: 'How do I reclaim storage of dead tuples?', document_ids: ['vacuum'] }),
        JSON.stringify({
          question: 'How can I build an index without locking writes?',
          document_ids: ['index', 'indexes'],
          answer_contains: ['CREATE INDEX CONCURRENTLY', 'REINDEX'],
        }),
        JSON.stringify({
          question: 'Which program writes an archive of a database?',
          document_ids: ['vacuum'],
        }),
      ].join('\n'),
    );
    const env = cleanEnv({ KAS_API_KEY: KEY });
    const { stdout, stderr } = await run(process.execPath, [cli, 'eval', golden, '--url', running.url], {
      env,
    });
    expect(stdout).toContain('questions        3');
    expect(stdout).toMatch(/recall@1 0\.667 +recall@5 0\.667/);
    expect(stdout).toMatch(/cites an expected document 0\.667 +citation \[1\] expected 0\.667/);
    expect(stdout).toContain('Which program writes an archive of a database?  →  dump');
    expect(stderr).toContain('evaluated 3/3 questions');
    // The expected text of the answers, and an expected id that no document has.
    expect(stdout).toContain('contain the expected text 1');
    expect(stdout).toContain('no indexed document has (misspelt, or not indexed): indexes');

    const json = await run(
      process.execPath,
      [cli, 'eval', golden, '--url', running.url, '--json', '--no-chat'],
      {
        env,
      },
    );
    const report = JSON.parse(json.stdout);
    expect(report.chat).toBeNull();
    expect(report.search.mrr_at_10).toBeCloseTo(0.667, 3);
    expect(report.missing_document_ids).toEqual(['indexes']);

    // Evaluation chats are deleted afterwards.
    const sessions = await fetch(`${running.url}/api/chat/get-user-chat-sessions`, {
      headers: { authorization: `Bearer ${KEY}` },
    }).then((r) => r.json());
    expect(sessions.sessions).toEqual([]);

    // Mistakes are explained: a broken golden set, no key.
    writeFileSync(golden, '{"question": "no ids"}\n');
    await expect(
      run(process.execPath, [cli, 'eval', golden, '--url', running.url], { env }),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('line 1: expected {"question": string, "document_ids"'),
    });
    await expect(run(process.execPath, [cli, 'eval', golden], { env: cleanEnv({}) })).rejects.toMatchObject({
      stderr: expect.stringContaining('KAS_API_KEY'),
    });
  }, 120_000);
});
