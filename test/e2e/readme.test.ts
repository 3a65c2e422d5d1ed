import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWebsite, htmlPage, startFakeWebsite } from '../fakes/website.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

/** The shell blocks a document marks `<!-- readme-test -->`, in order. */
function markedBlocks(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  return [...text.matchAll(/<!-- readme-test -->\n```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

const hasJq = spawnSync('jq', ['--version']).status === 0;

let site: FakeWebsite;
let s: TestServer;
beforeAll(async () => {
  site = await startFakeWebsite(
    new Map([
      ['/', htmlPage('Visitor guide', 'Welcome to the office.', ['/parking'])],
      ['/parking', htmlPage('Parking', 'Visitors park on level minus two of the north garage.')],
    ]),
  );
  s = await startTestServer({
    worker: true,
    env: { KAS_OUTBOUND_ALLOWLIST: '127.0.0.1', KAS_CONNECTOR_HEARTBEAT_MS: '200' },
  });
});
afterAll(async () => {
  await s?.close();
  await site?.close();
});

// The README's blocks use curl and jq; CI has both. Elsewhere the test is skipped without jq.
describe.skipIf(!hasJq && !process.env.CI)('the README, run as written against a fresh server', () => {
  it('adds a document, asks (streamed, whole, follow-up), searches, connects a website and creates an agent', async () => {
    if (!hasJq) throw new Error('jq is missing: the README blocks need it (apt-get install jq)');
    const blocks = markedBlocks('README.md');
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    // One shell runs the blocks in order, as a reader pastes them: later blocks use the ids earlier ones saved.
    const script = blocks.map((block, i) => `echo '--- block ${i + 1}' >&2\n${block}`).join('\n');
    const { stdout, stderr } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey, SITE: `${site.url}/` },
      timeout: 120_000,
      maxBuffer: 1 << 24,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `a README block failed:\n${error.stderr ?? ''}\n${error.stdout ?? ''}\n${error.message}`,
      );
    });
    expect(stderr.match(/--- block \d+/g)).toHaveLength(blocks.length);
    expect(stdout).toContain('"already_existed":false');
    // the streamed answer, the whole one, the search's blurb and the agent's answer; then the follow-up
    expect(stdout.match(/30 days of paid leave/g)).toHaveLength(4);
    expect(stdout).toContain('two weeks before you go');
    expect(stdout).toContain('"document_id": "handbook-leave"');
    expect(stdout).toContain('"last_index_attempt_status": "success"');
    expect(stdout).toContain('"num_docs_indexed": 2');
    // the new key for a program, the last block's output
    expect(stdout.trim().split('\n').at(-1)).toMatch(/^svck-[A-Za-z0-9_-]{43}$/);
    expect(site.hits.get('/parking')).toBeGreaterThan(0);
  }, 180_000);

  it('runs the connectors walk-through: ids from the answers, progress, pause, resume, run now, delete', async () => {
    const blocks = markedBlocks('docs/connectors.md');
    expect(blocks).toHaveLength(1);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', blocks[0]!], {
      env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey, SITE: `${site.url}/` },
      timeout: 120_000,
    });
    // The hidden ingestion pair has id 1, and the README's run made more: the ids came from the answers.
    const ids = /connector (\d+), credential (\d+), CC pair (\d+)/.exec(stdout);
    expect(
      ids
        ?.slice(1)
        .map(Number)
        .every((id) => id > 1),
    ).toBe(true);
    expect(stdout).toContain('is paused');
    expect(stdout).toContain('is active');
    expect(stdout).toContain('Queued 1 run');
    expect(stdout).toContain('is being deleted');
  }, 150_000);

  it.each(
    [...readFileSync(join(root, 'packages/sdk/README.md'), 'utf8').matchAll(/^\| `([a-z-]+)` +\|/gm)]
      .map((match) => match[1]!)
      // actions needs a tool-calling model (test/e2e/actions.test.ts runs it against a fake one)
      .filter((name) => name !== 'actions'),
  )(
    'runs the %s example with its documented command',
    async (name) => {
      const { stdout } = await run('npm', ['run', '-s', 'example', '--', name], {
        cwd: root,
        env: { ...process.env, KAS_URL: s.url, KAS_API_KEY: s.adminKey, npm_config_update_notifier: 'false' },
        timeout: 120_000,
      });
      expect(stdout.length).toBeGreaterThan(0);
    },
    150_000,
  );
});
