import { afterAll, describe, expect, it } from 'vitest';
import { runContractFuzz, summariseFindings } from '../fuzz/contract-fuzz.ts';
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
      `fuzz ${db}: ${report.cases} cases in ${report.seconds.toFixed(1)} s, slowest ${Math.round(report.slowestMs)} ms, ` +
        `statuses ${JSON.stringify(report.statuses)}, ${Object.keys(report.successes).length} operations answered 2xx`,
    );
    expect(report.findings.length, summariseFindings(report.findings)).toBe(0);
    expect(report.cases).toBe(CASES);
    // The valid half reaches the services: most operations answered 2xx at least once.
    expect(Object.keys(report.successes).length).toBeGreaterThan(40);
  });
});
