import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import * as identityService from '../identity/identity.service.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import * as usersService from '../users/users.service.ts';

const t = useTestRuntime();

/** Every row of every table of the database, as text: what a dump holds. */
async function dumpDatabase(): Promise<string> {
  const tables = await sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(t.deps.db);
  const parts: string[] = [];
  for (const { table_name } of tables.rows) {
    const rows = await sql<{
      row: string;
    }>`SELECT row_to_json(r)::text AS row FROM ${sql.table(table_name)} r`.execute(t.deps.db);
    for (const { row } of rows.rows) parts.push(`${table_name}: ${row}`);
  }
  return parts.join('\n');
}

describe('secrets at rest', () => {
  it('keeps no API key, personal token or credential secret in clear anywhere in the database', async () => {
    const admin = t.caller(t.adminKey);
    const key = await admin.apiKeys.create({ name: 'at rest', role: 'basic' });
    // A person's first token (as `kas user token create` gives it) and one they create through the API.
    const person = await usersService.createPerson({
      ctx: t.deps,
      email: 'owner@corp.example',
      role: 'basic',
    });
    const first = await identityService.createPersonalToken({
      ctx: t.deps,
      userId: person.id,
      input: { name: 'first' },
    });
    const token = await t
      .caller(first.token)
      .personalTokens.create({ name: 'laptop' })
      .catch(() => null);
    const credentialSecret = 'credential-secret-value-7f3a9';
    const credential = await admin.connectors.createCredential({
      name: 'site login',
      source: 'web',
      credential_json: { password: credentialSecret },
    });
    expect(JSON.stringify(credential)).not.toContain(credentialSecret);

    const dump = await dumpDatabase();
    expect(dump).toContain('site login'); // the dump does hold the rows
    expect(token?.token).toMatch(/^kpat-/);
    const secrets = [key.api_key, t.adminKey, first.token, credentialSecret, token?.token].map(String);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(10);
      expect(dump.includes(secret), `found a secret in clear: ${secret.slice(0, 9)}…`).toBe(false);
    }
  });
});
