import type { Role } from '../auth/roles.ts';
import type { DbExecutor } from '../db/database.ts';

const descriptorColumns = [
  'api_keys.id as api_key_id',
  'api_keys.display as api_key_display',
  'api_keys.name as api_key_name',
  'users.role as api_key_role',
  'users.id as user_id',
  'api_keys.expires_at as expires_at',
  'api_keys.allow_personal_tokens as allow_personal_tokens',
] as const;

export function listKeys(db: DbExecutor) {
  return db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select(descriptorColumns)
    .orderBy('api_keys.id')
    .execute();
}

export function findKey(db: DbExecutor, id: number) {
  return db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select(descriptorColumns)
    .where('api_keys.id', '=', id)
    .executeTakeFirst();
}

export function findActorByHash(db: DbExecutor, hashedKey: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select([
      'users.id as user_id',
      'users.role as role',
      'users.email as email',
      'users.is_active as is_active',
      'api_keys.id as api_key_id',
      'api_keys.expires_at as expires_at',
    ])
    .where('api_keys.hashed_key', '=', hashedKey)
    .executeTakeFirst();
}

export function insertKey(
  db: DbExecutor,
  row: {
    name: string | null;
    hashed_key: string;
    display: string;
    user_id: string;
    expires_at: Date | null;
    allow_personal_tokens: boolean;
  },
) {
  return db.insertInto('api_keys').values(row).returning('id').executeTakeFirstOrThrow();
}

export function updateKey(
  db: DbExecutor,
  id: number,
  patch: { name?: string | null; expires_at?: Date | null; allow_personal_tokens?: boolean },
) {
  return db
    .updateTable('api_keys')
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function updateKeySecret(db: DbExecutor, id: number, secret: { hashed_key: string; display: string }) {
  return db
    .updateTable('api_keys')
    .set({ ...secret, updated_at: new Date() })
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
}

export function findUserIdOfKey(db: DbExecutor, id: number) {
  return db.selectFrom('api_keys').select('user_id').where('id', '=', id).executeTakeFirst();
}

export async function countAdminKeys(db: DbExecutor): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('users.role', '=', 'admin' satisfies Role)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
