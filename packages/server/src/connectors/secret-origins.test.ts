import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type FakeGitHub, fakeRepo, startFakeGitHub } from '../../../../test/fakes/github.ts';
import { errorOf } from '../testing/errors.ts';
import { createTestRuntime, type TestRuntime } from '../testing/test-runtime.ts';
import { schedulerPass } from './scheduler.ts';
import { type AnySource, validateWith } from './sources/source.ts';

/** A server the attacker controls: records every Authorization header it is sent. */
interface Catcher {
  url: string;
  authorizations: string[];
  close(): Promise<void>;
}

async function startCatcher(): Promise<Catcher> {
  const authorizations: string[] = [];
  const server: Server = createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('[]');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A source whose credential names its own token endpoint in a key that is not masked. */
const vault: AnySource = {
  name: 'vault',
  displayName: 'Vault',
  needsCredential: true,
  inputTypes: ['poll'],
  publicCredentialKeys: ['token_url'],
  validateConfig: (raw) => validateWith(z.object({ base_url: z.url() }), raw),
  validateCredential: (raw) => validateWith(z.object({ secret: z.string().min(1), token_url: z.url() }), raw),
  secretTargets: (config: { base_url: string }, credential: { token_url: string }) => [
    { key: 'connector_specific_config.base_url', url: config.base_url },
    { key: 'credential_json.token_url', url: credential.token_url },
  ],
  async *load() {
    yield { documents: [], checkpoint: null };
  },
};

let t: TestRuntime;
let gh: FakeGitHub;
let evil: Catcher;
let curator: { key: string; user_id: string };
let groupA: number;
let counter = 0;

beforeAll(async () => {
  t = await createTestRuntime({
    KAS_OUTBOUND_ALLOWLIST: '127.0.0.1',
    KAS_OUTBOUND_RETRIES: '0',
    KAS_CONNECTOR_BACKOFF_MS: '0',
  });
  t.deps.sources.register(vault);
  gh = await startFakeGitHub('acme');
  evil = await startCatcher();
  curator = await t.createKey('basic', 'curator');
  const admin = t.caller(t.adminKey);
  groupA = (await admin.userGroups.create({ name: 'A', user_ids: [curator.user_id] })).id;
  await admin.userGroups.setCurator({ user_group_id: groupA, user_id: curator.user_id, is_curator: true });
});
afterAll(async () => {
  await evil.close();
  await gh.close();
  await t.close();
});
beforeEach(() => {
  gh.token = 'ghp_admin_secret';
  gh.repos = [fakeRepo('widgets')];
  evil.authorizations.length = 0;
});

const admin = () => t.caller(t.adminKey);
const asCurator = () => t.caller(curator.key);
const pass = () => schedulerPass(t.deps, new AbortController().signal);
const connectorOf = async (caller: ReturnType<TestRuntime['caller']>, id: number) =>
  (await caller.connectors.list({})).find((c) => c.id === id);
const leaked = () => evil.authorizations.filter((a) => a.includes('ghp_admin_secret'));

/** What an admin sets up for group A: a GitHub connector and its token (masked from the curator), linked. */
async function adminPair() {
  counter++;
  const connector = await admin().connectors.create({
    name: `gh ${counter}`,
    source: 'github',
    input_type: 'poll',
    connector_specific_config: { base_url: gh.url, repo_owner: 'acme' },
    access_type: 'public',
  });
  const credential = await admin().connectors.createCredential({
    source: 'github',
    credential_json: { github_access_token: 'ghp_admin_secret' },
    groups: [groupA],
  });
  await admin().connectors.createPair({
    connector_id: connector.id,
    credential_id: credential.id,
    name: `gh pair ${counter}`,
    groups: [groupA],
  });
  await pass();
  return { connectorId: connector.id, credentialId: credential.id };
}

describe('secrets bound to their origin', () => {
  it("refuses a curator's move of a linked connector to another host: the admin's token never reaches it", async () => {
    const { connectorId, credentialId } = await adminPair();
    expect((await connectorOf(asCurator(), connectorId))?.credential_ids).toEqual([credentialId]);
    const refused = await errorOf(
      asCurator().connectors.update({
        connector_id: connectorId,
        connector_specific_config: { base_url: evil.url, repo_owner: 'acme' },
      }),
    );
    expect(refused).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('connector_specific_config.base_url'),
    });
    expect(refused.detail).toContain(evil.url);
    expect(refused.detail).not.toContain('ghp_admin_secret');
    expect((await connectorOf(admin(), connectorId))?.connector_specific_config).toEqual({
      base_url: gh.url,
      repo_owner: 'acme',
    });
    await asCurator().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
    await pass();
    expect(leaked()).toEqual([]);
    expect(evil.authorizations).toEqual([]);
  });

  it('refuses the same move to an admin: the rule holds for everyone', async () => {
    const { connectorId } = await adminPair();
    expect(
      await errorOf(
        admin().connectors.update({
          connector_id: connectorId,
          connector_specific_config: { base_url: `${evil.url}/api/v3`, repo_owner: 'acme' },
        }),
      ),
    ).toMatchObject({ status: 400, error_code: 'SECRET_REENTRY_REQUIRED' });
    // Another path or repository on the same origin is no move.
    await admin().connectors.update({
      connector_id: connectorId,
      connector_specific_config: { base_url: `${gh.url}/`, repo_owner: 'acme', repos: 'widgets' },
    });
  });

  it("refuses a curator's link of an admin's credential to a connector pointing elsewhere", async () => {
    const { credentialId } = await adminPair();
    const theirs = await asCurator().connectors.create({
      name: `evil ${++counter}`,
      source: 'github',
      input_type: 'poll',
      connector_specific_config: { base_url: evil.url, repo_owner: 'acme' },
      access_type: 'public',
    });
    expect(
      await errorOf(
        asCurator().connectors.createPair({
          connector_id: theirs.id,
          credential_id: credentialId,
          name: `evil pair ${counter}`,
          groups: [groupA],
        }),
      ),
    ).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('connector_specific_config.base_url'),
    });
    await pass();
    expect(evil.authorizations).toEqual([]);

    // A connector on the origin the token was entered for may use it.
    const same = await asCurator().connectors.create({
      name: `same ${++counter}`,
      source: 'github',
      input_type: 'poll',
      connector_specific_config: { base_url: gh.url, repo_owner: 'acme', repos: 'widgets' },
      access_type: 'public',
    });
    await asCurator().connectors.createPair({
      connector_id: same.id,
      credential_id: credentialId,
      name: `same pair ${counter}`,
      groups: [groupA],
    });
  });

  it('lets only the one who entered a credential link it first: an unlinked admin credential is not up for grabs', async () => {
    const credential = await admin().connectors.createCredential({
      source: 'github',
      credential_json: { github_access_token: 'ghp_admin_secret' },
      groups: [groupA],
    });
    const theirs = await asCurator().connectors.create({
      name: `evil ${++counter}`,
      source: 'github',
      input_type: 'poll',
      connector_specific_config: { base_url: evil.url, repo_owner: 'acme' },
      access_type: 'public',
    });
    expect(
      await errorOf(
        asCurator().connectors.createPair({
          connector_id: theirs.id,
          credential_id: credential.id,
          name: `grab ${counter}`,
          groups: [groupA],
        }),
      ),
    ).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('bound to no address yet'),
    });
    await pass();
    expect(evil.authorizations).toEqual([]);
  });

  it('moves a connector once the secret is entered again, and binds it to the new origin', async () => {
    const { connectorId, credentialId } = await adminPair();
    const other = await startFakeGitHub('acme');
    try {
      other.token = 'ghp_new';
      other.repos = [fakeRepo('widgets')];
      await asCurator().connectors.updateCredential({
        credential_id: credentialId,
        credential_json: { github_access_token: 'ghp_new' },
      });
      await asCurator().connectors.update({
        connector_id: connectorId,
        connector_specific_config: { base_url: other.url, repo_owner: 'acme' },
      });
      await asCurator().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
      await pass();
      expect(other.requests.length).toBeGreaterThan(0);
      // Bound again: the next move needs the secret once more.
      expect(
        await errorOf(
          asCurator().connectors.update({
            connector_id: connectorId,
            connector_specific_config: { base_url: evil.url, repo_owner: 'acme' },
          }),
        ),
      ).toMatchObject({ status: 400, error_code: 'SECRET_REENTRY_REQUIRED' });
      // Keeping the secret through the mask is not entering it again.
      await asCurator().connectors.updateCredential({
        credential_id: credentialId,
        credential_json: { github_access_token: '********' },
      });
      expect(
        await errorOf(
          asCurator().connectors.update({
            connector_id: connectorId,
            connector_specific_config: { base_url: evil.url, repo_owner: 'acme' },
          }),
        ),
      ).toMatchObject({ status: 400, error_code: 'SECRET_REENTRY_REQUIRED' });
      // The one who entered it may move it; someone else may not.
      await admin().connectors.updateCredential({
        credential_id: credentialId,
        credential_json: { github_access_token: 'ghp_admin_secret' },
      });
      expect(
        await errorOf(
          asCurator().connectors.update({
            connector_id: connectorId,
            connector_specific_config: { base_url: evil.url, repo_owner: 'acme' },
          }),
        ),
      ).toMatchObject({ status: 400, error_code: 'SECRET_REENTRY_REQUIRED' });
      expect(evil.authorizations).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('refuses to run a pair whose connector was pointed elsewhere outside kas', async () => {
    const { connectorId } = await adminPair();
    await t.deps.db
      .updateTable('connectors')
      .set({ connector_specific_config: JSON.stringify({ base_url: evil.url, repo_owner: 'acme' }) })
      .where('id', '=', connectorId)
      .execute();
    await admin().connectors.runOnce({ connector_id: connectorId, from_beginning: true });
    await pass();
    const status = (await admin().connectors.indexingStatus({})).find((s) => s.connector_id === connectorId);
    const attempts = await admin().connectors.indexAttempts({
      cc_pair_id: status?.cc_pair_id as number,
      page_num: 0,
      page_size: 1,
    });
    expect(attempts.items[0]).toMatchObject({
      status: 'failed',
      error_msg: expect.stringContaining('connector_specific_config.base_url'),
    });
    expect(evil.authorizations).toEqual([]);
  });

  it('refuses a credential update that points its own endpoint elsewhere while keeping the masked secret', async () => {
    const connector = await admin().connectors.create({
      name: `vault ${++counter}`,
      source: 'vault',
      input_type: 'poll',
      connector_specific_config: { base_url: 'https://vault.example' },
      access_type: 'public',
    });
    const credential = await admin().connectors.createCredential({
      source: 'vault',
      credential_json: { secret: 's3cret', token_url: 'https://vault.example/token' },
      groups: [groupA],
    });
    await admin().connectors.createPair({
      connector_id: connector.id,
      credential_id: credential.id,
      name: `vault pair ${counter}`,
      groups: [groupA],
    });
    expect(
      await errorOf(
        asCurator().connectors.updateCredential({
          credential_id: credential.id,
          credential_json: { secret: '********', token_url: `${evil.url}/token` },
        }),
      ),
    ).toMatchObject({
      status: 400,
      error_code: 'SECRET_REENTRY_REQUIRED',
      detail: expect.stringContaining('credential_json.token_url'),
    });
    // Same origin, another path: allowed with the mask.
    await asCurator().connectors.updateCredential({
      credential_id: credential.id,
      credential_json: { secret: '********', token_url: 'https://vault.example/oauth/token' },
    });
    // With the secret given again, the endpoint may move.
    const moved = await asCurator().connectors.updateCredential({
      credential_id: credential.id,
      credential_json: { secret: 'mine', token_url: `${evil.url}/token` },
    });
    expect(moved.credential_json).toEqual({ secret: '********', token_url: `${evil.url}/token` });
  });
});
