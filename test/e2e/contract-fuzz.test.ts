import { afterAll, describe, expect, it } from 'vitest';
import {
  IdPool,
  materialise,
  type Operation,
  runContractFuzz,
  summariseFindings,
} from '../fuzz/contract-fuzz.ts';
import { prepareFuzzTarget } from '../fuzz/target.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const CASES = Number(process.env.KAS_FUZZ_CASES ?? 3000);
const SEED = Number(process.env.KAS_FUZZ_SEED ?? 20261123);

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe.each(['pglite', 'postgres'] as const)('the contract fuzzer on %s', (db) => {
  it(`sends ${CASES} generated requests and every answer keeps the contract`, {
    timeout: 600_000,
  }, async () => {
    const s = await startTestServer({
      db,
      env: { KAS_AUTH_FAILURES_PER_MINUTE: '0', KAS_CHAT_HEARTBEAT_MS: '1000' },
    });
    servers.push(s);
    const target = await prepareFuzzTarget(s.url, s.adminKey);
    const report = await runContractFuzz(target, { cases: CASES, seed: SEED, concurrency: 4 });
    console.log(
      `fuzz ${db} (seed ${SEED}): ${report.cases} cases in ${report.seconds.toFixed(1)} s, slowest ${Math.round(report.slowestMs)} ms, ` +
        `statuses ${JSON.stringify(report.statuses)}, ${Object.keys(report.successes).length} operations answered 2xx`,
    );
    expect(report.findings.length, summariseFindings(report.findings)).toBe(0);
    expect(report.cases).toBe(CASES);
    // The valid half reaches the services: most operations answered 2xx at least once.
    expect(Object.keys(report.successes).length).toBeGreaterThan(40);
  });
});

describe('the fuzzer itself', () => {
  it('never names its own keys or users, so a generated revoke cannot silence the run', () => {
    const op: Operation = {
      method: 'DELETE',
      path: '/api/admin/api-key/{api_key_id}',
      operationId: 'revoke',
      parameters: [{ in: 'path', name: 'api_key_id', required: true, schema: { type: 'integer' } }],
      bodySchema: { type: 'object' },
      bodyType: 'application/json',
      responses: {},
    };
    const pool = new IdPool(new Set<number | string>([7, 'user-7']));
    const sent = materialise(
      op,
      {
        op: 0,
        key: 'admin',
        path: { api_key_id: 7 },
        query: { user_id: 'user-7' },
        body: { user_id: 'user-7', ids: [7, 8] },
        mutation: null,
        pick: 0,
        variant: 0,
      },
      { admin: 'k', curator: 'k', basic: 'k', limited: 'k', none: undefined, unknown: 'k' },
      pool,
    );
    expect(sent.path).toBe('/api/admin/api-key/0?user_id=x');
    expect(JSON.parse(String(sent.body))).toEqual({ user_id: 'x', ids: [0, 8] });
  });
});
