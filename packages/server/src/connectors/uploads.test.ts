import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { errorOf } from '../testing/errors.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { cleanUpUploads } from './scheduler.ts';

// Uploads for file connectors: removed when no connector references them after the grace period, and
// with the connector (or its last pair) that named them.
const t = useTestRuntime({ KAS_CONNECTOR_UPLOAD_GRACE_HOURS: '2' });
const { admin, pass } = t;
let counter = 0;

async function upload(...names: string[]) {
  return admin().connectorSources.uploadFiles({
    files: names.map((name) => ({
      name,
      content_type: 'text/plain',
      data: new TextEncoder().encode(`the file ${name} mentions a quokka`),
    })),
  });
}

async function stored(ids: string[]): Promise<string[]> {
  const rows = await sql<{ id: string }>`
    SELECT id::text FROM connector_files WHERE id = ANY(${ids}::uuid[]) ORDER BY id`.execute(t.deps.db);
  return rows.rows.map((r) => r.id).sort();
}

/** Makes uploads look `hours` old. */
async function age(ids: string[], hours: number) {
  await sql`UPDATE connector_files SET created_at = now() - make_interval(secs => ${hours * 3600})
    WHERE id = ANY(${ids}::uuid[])`.execute(t.deps.db);
}

async function fileConnector(fileIds: string[], zip: string | null = null) {
  counter++;
  const { id } = await admin().connectors.create({
    name: `files ${counter}`,
    source: 'file',
    input_type: 'load_state',
    access_type: 'public',
    connector_specific_config: { file_locations: fileIds, zip_metadata_file_id: zip },
  });
  return id;
}

async function pairWith(connectorId: number) {
  const cred = await admin().connectors.createCredential({ source: 'file', credential_json: {} });
  await admin().connectors.createPair({
    connector_id: connectorId,
    credential_id: cred.id,
    name: `files pair ${counter}`,
    access_type: 'public',
  });
  return cred.id;
}

describe('connector uploads clean-up', () => {
  it('removes uploads no connector references once older than the grace period, and only those', async () => {
    const orphan = await upload('orphan.txt');
    const fresh = await upload('fresh.txt');
    const used = await upload('used-a.txt', 'used-b.txt');
    const connectorId = await fileConnector(used.file_paths);
    const all = [...orphan.file_paths, ...fresh.file_paths, ...used.file_paths];
    await age([...orphan.file_paths, ...used.file_paths], 3);
    await age(fresh.file_paths, 1);
    expect(await cleanUpUploads(t.deps)).toBeGreaterThanOrEqual(1);
    expect(await stored(all)).toEqual([...fresh.file_paths, ...used.file_paths].sort());
    // Dropped from the connector's configuration: removed at the next sweep.
    await admin().connectors.update({
      connector_id: connectorId,
      connector_specific_config: { file_locations: [used.file_paths[0] as string] },
    });
    await cleanUpUploads(t.deps);
    expect(await stored(used.file_paths)).toEqual([used.file_paths[0]]);
  });

  it('deleting a file connector removes its uploads (and the zip metadata) but not those another connector names', async () => {
    const mine = await upload('mine.txt');
    const shared = await upload('shared.txt');
    const meta = await upload('meta.txt');
    const first = await fileConnector(
      [...mine.file_paths, ...shared.file_paths],
      meta.file_paths[0] as string,
    );
    await fileConnector(shared.file_paths);
    await admin().connectors.delete({ connector_id: first });
    expect(await stored([...mine.file_paths, ...shared.file_paths, ...meta.file_paths])).toEqual(
      shared.file_paths,
    );
  });

  it('deleting the last CC pair of a file connector removes the connector and its uploads', async () => {
    const files = await upload('paired.txt');
    const connectorId = await fileConnector(files.file_paths);
    const credentialId = await pairWith(connectorId);
    await pass();
    await admin().connectors.deletionAttempt({ connector_id: connectorId, credential_id: credentialId });
    for (let i = 0; i < 50 && (await stored(files.file_paths)).length; i++) {
      await pass();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await stored(files.file_paths)).toEqual([]);
  });
});

describe('connector uploads belong to their uploader', () => {
  it("answers another's upload exactly like an absent one, in a file connector's configuration", async () => {
    const admin = t.caller(t.adminKey);
    const amy = await t.createKey('curator', 'amy');
    const ben = await t.createKey('curator', 'ben');
    const groupA = (await admin.userGroups.create({ name: 'uploads A', user_ids: [amy.user_id] })).id;
    const groupB = (await admin.userGroups.create({ name: 'uploads B', user_ids: [ben.user_id] })).id;
    await admin.userGroups.setCurator({ user_group_id: groupA, user_id: amy.user_id, is_curator: true });
    await admin.userGroups.setCurator({ user_group_id: groupB, user_id: ben.user_id, is_curator: true });
    const upload = (who: string) =>
      t.caller(who).connectorSources.uploadFiles({
        files: [
          { name: 'secret.txt', content_type: 'text/plain', data: new TextEncoder().encode('a secret') },
        ],
      });
    const amys = (await upload(amy.key)).file_paths[0] as string;
    const bens = (await upload(ben.key)).file_paths[0] as string;
    const create = (who: string, fileId: string) =>
      t.caller(who).connectors.create({
        name: `files of ${fileId}`,
        source: 'file',
        input_type: 'load_state',
        access_type: 'private',
        groups: [who === ben.key ? groupB : groupA],
        connector_specific_config: { file_locations: [fileId] },
      });
    const absentId = '00000000-0000-4000-8000-000000000000';
    const absent = await errorOf(create(ben.key, absentId));
    expect(absent).toMatchObject({ status: 400, error_code: 'INVALID_INPUT' });
    expect(await errorOf(create(ben.key, amys))).toEqual({
      ...absent,
      detail: absent.detail.replace(absentId, amys),
    });
    expect(await errorOf(create(ben.key, 'not-an-upload'))).toEqual({
      ...absent,
      detail: absent.detail.replace(absentId, 'not-an-upload'),
    });
    // Their own upload is theirs to use; adding another's to it later is refused the same way.
    const { id } = await create(ben.key, bens);
    expect(
      await errorOf(
        t.caller(ben.key).connectors.update({
          connector_id: id,
          connector_specific_config: { file_locations: [bens, amys] },
        }),
      ),
    ).toEqual({ ...absent, detail: absent.detail.replace(absentId, amys) });
    // Kept as it was: names only uploads it already had.
    await t.caller(ben.key).connectors.update({ connector_id: id, name: 'renamed' });
    // Admins use any upload.
    expect((await create(t.adminKey, amys)).id).toBeGreaterThan(0);
  });
});
