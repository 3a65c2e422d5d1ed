/**
 * GitHub under its primary rate limit (issue 23): an organisation of BENCH_GITHUB_PRS pull requests
 * (default 5,000) behind the local GitHub fake with a quota of BENCH_GITHUB_QUOTA requests (default
 * 2,000) per BENCH_GITHUB_WINDOW_MS window (default 10 s), indexed through the scheduler on the
 * embedded database. Reports the time to complete, the requests spent (the floor is one listing page
 * per 100 pull requests plus three per pull request: comments, reviews, review comments), the requests
 * refused by the fake (403 with `x-ratelimit-remaining: 0`: none when the source waits for
 * `x-ratelimit-reset`) and the attempts it took.
 *   node test/bench/github-quota.ts
 * Measured on the shared 2-core machine (2026-11-26): 5,000 pull requests complete in 111 s (ten
 * windows at a budget of 1,600) in one resumed attempt, with 15,056 requests for a floor of 15,051
 * (each resume reads its listing page again) and none refused by GitHub. Again after the conformance,
 * internal-repository and retry changes (2026-11-26, load average ~14): 108.3 s, 15,060 requests (15,051
 * distinct, the floor), none refused, one attempt.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiKeysService, configFrom, createRuntime } from '@kas/server';
import { apiKeyActor, connectorsService, schedulerPass } from '@kas/server/testing';
import { sql } from 'kysely';
import { fakeRepo, startFakeGitHub } from '../fakes/github.ts';

const PRS = Number(process.env.BENCH_GITHUB_PRS ?? 5000);
const QUOTA = Number(process.env.BENCH_GITHUB_QUOTA ?? 2000);
const WINDOW_MS = Number(process.env.BENCH_GITHUB_WINDOW_MS ?? 10_000);
const SHARE = Number(process.env.BENCH_GITHUB_SHARE ?? 0.8);
const LIMIT_S = Number(process.env.BENCH_GITHUB_LIMIT_S ?? 600);

const gh = await startFakeGitHub('acme');
gh.pageSize = 100;
gh.repos = [
  fakeRepo('monorepo', {
    issues: Array.from({ length: PRS }, (_, i) => ({
      number: i + 1,
      title: `Change ${i + 1}`,
      body: `pull request ${i + 1} of the quota benchmark`,
      user: 'octocat',
      state: 'closed' as const,
      updated_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      is_pull: true,
      merged: true,
      comments: [],
    })),
  }),
];
gh.quota = { limit: QUOTA, windowMs: WINDOW_MS, status: 403, used: 0, resetAt: 0, refused: 0 };

const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-github-'));
const runtime = await createRuntime(
  configFrom({
    KAS_LOG_LEVEL: 'error',
    KAS_DATA_DIR: dataDir,
    KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
    KAS_CONNECTOR_BACKOFF_MS: '0',
    KAS_RATE_LIMIT_PER_MINUTE: '0',
  }),
  { skipBootstrap: true },
);
try {
  const key = await apiKeysService.createApiKey({
    ctx: runtime.deps,
    input: { role: 'admin', name: 'bench' },
  });
  const actor = apiKeyActor({ user_id: key.user_id, role: 'admin', api_key_id: key.api_key_id });
  const ctx = { ...runtime.deps, actor };
  const { id } = await connectorsService.createConnector({
    ctx,
    input: {
      name: 'github quota',
      source: 'github',
      input_type: 'poll',
      connector_specific_config: {
        base_url: gh.url,
        repo_owner: 'acme',
        include_issues: false,
        request_budget_share: SHARE,
      },
      access_type: 'public',
    },
  });
  const credential = await connectorsService.createCredential({
    ctx,
    input: {
      source: 'github',
      credential_json: { github_access_token: gh.token },
      admin_public: true,
      curator_public: false,
      groups: [],
    },
  });
  const pair = await connectorsService.createPair({
    ctx,
    input: {
      connector_id: id,
      credential_id: credential.id,
      name: 'github quota',
      access_type: 'public',
      groups: [],
    },
  });
  const pairId = pair.data as number;
  const started = performance.now();
  let status = '';
  while ((performance.now() - started) / 1000 < LIMIT_S) {
    await schedulerPass(runtime.deps, new AbortController().signal);
    const rows = await sql<{ status: string }>`
      SELECT status FROM index_attempts WHERE cc_pair_id = ${pairId} ORDER BY id DESC LIMIT 1`.execute(
      runtime.deps.db,
    );
    status = rows.rows[0]?.status ?? '';
    if (status === 'success' || status === 'completed_with_errors') break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const seconds = (performance.now() - started) / 1000;
  const attempts = await sql<{ status: string; n: number }>`
    SELECT status, count(*)::int AS n FROM index_attempts WHERE cc_pair_id = ${pairId} GROUP BY status`.execute(
    runtime.deps.db,
  );
  const docs = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM document_by_cc_pair WHERE cc_pair_id = ${pairId}`.execute(runtime.deps.db);
  const distinct = new Set(gh.requests).size;
  const floor = Math.ceil(PRS / 100) + 3 * PRS + 1;
  console.log(
    JSON.stringify(
      {
        prs: PRS,
        quota: `${QUOTA} requests / ${WINDOW_MS / 1000} s`,
        request_budget_share: SHARE,
        completed: status === 'success' || status === 'completed_with_errors',
        seconds: Number(seconds.toFixed(1)),
        documents: docs.rows[0]?.n ?? 0,
        requests: gh.requests.length,
        distinct_requests: distinct,
        refused_by_github: gh.quota.refused,
        floor_requests: floor,
        attempts: Object.fromEntries(attempts.rows.map((r) => [r.status, r.n])),
      },
      null,
      2,
    ),
  );
} finally {
  await runtime.close();
  await gh.close();
  rmSync(dataDir, { recursive: true, force: true });
}
