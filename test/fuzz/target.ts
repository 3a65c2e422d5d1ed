import type { FuzzKey, FuzzTarget } from './contract-fuzz.ts';

async function createKey(
  url: string,
  adminKey: string,
  role: string,
  name: string,
  ownIds: Set<number | string>,
): Promise<string> {
  const res = await fetch(`${url}/api/admin/api-key`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ role, name }),
  });
  if (res.status !== 200) throw new Error(`creating a ${role} key failed: ${res.status} ${await res.text()}`);
  const created = (await res.json()) as { api_key: string; api_key_id: number; user_id: string };
  ownIds.add(created.api_key_id);
  ownIds.add(created.user_id);
  return created.api_key;
}

/**
 * Keys for the fuzzer, created after a dozen decoys so the small ids the generator favours name the
 * decoys (which it may revoke) rather than its own keys, plus a reserve admin key to renew them.
 */
export async function prepareFuzzTarget(url: string, bootstrapAdminKey: string): Promise<FuzzTarget> {
  const ownIds = new Set<number | string>();
  const decoys = new Set<number | string>();
  for (let i = 0; i < 12; i++)
    await createKey(
      url,
      bootstrapAdminKey,
      ['basic', 'curator', 'admin', 'limited'][i % 4]!,
      `decoy ${i}`,
      decoys,
    );
  const reserve = await createKey(url, bootstrapAdminKey, 'admin', 'fuzz reserve', ownIds);
  const keys: Record<FuzzKey, string | undefined> = {
    admin: await createKey(url, reserve, 'admin', 'fuzz admin', ownIds),
    curator: await createKey(url, reserve, 'curator', 'fuzz curator', ownIds),
    basic: await createKey(url, reserve, 'basic', 'fuzz basic', ownIds),
    limited: await createKey(url, reserve, 'limited', 'fuzz limited', ownIds),
    none: undefined,
    unknown: `svck-${'Z'.repeat(43)}`,
  };
  return {
    url,
    keys,
    ownIds,
    // The reserve key first; should a generated request have reached it after all, the bootstrap key.
    renewKey: async (role) =>
      createKey(url, reserve, role, `fuzz ${role} renewed`, ownIds)
        .catch(() => createKey(url, bootstrapAdminKey, role, `fuzz ${role} renewed`, ownIds))
        .catch(() => undefined),
  };
}
