import { createTestDatabase, type TestDatabase } from '@kas/server/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { runCrashRounds } from '../crash/crash-rounds.ts';
import { stopAllProcesses, tempDir } from '../harness/process.ts';

const databases: TestDatabase[] = [];
afterAll(async () => {
  stopAllProcesses();
  for (const database of databases) await database.drop();
});

describe.each(['pglite', 'postgres'] as const)('crash without loss on %s', (db) => {
  it('SIGKILL during 8-client ingestion, three rounds: every acknowledged document survives, searchable, nothing half-written', {
    timeout: 240_000,
  }, async () => {
    const env: Record<string, string> = { KAS_DATA_DIR: tempDir() };
    if (db === 'postgres') {
      const database = await createTestDatabase('postgres');
      databases.push(database);
      Object.assign(env, database.env);
    }
    const report = await runCrashRounds({ env, rounds: 3, docsPerRound: 40 });
    console.log(`crash ${db}: ${JSON.stringify(report)}`);
    expect(report.acknowledged).toBeGreaterThanOrEqual(120);
    expect(report.missing).toEqual([]);
    expect(report.unsearchable).toEqual([]);
    for (const count of Object.values(report.halfWritten)) expect(count).toBe(0);
    expect(Object.keys(report.halfWritten).length).toBe(5);
    // Restarting after a kill recovers nothing that grows: the last restart is not slower than the first.
    const [first, , last] = report.restartMs;
    expect(last!).toBeLessThan(Math.max(first! * 2, first! + 3000));
  });
});
