import type { ColumnType, Generated } from 'kysely';

/** Columns the database fills in on insert. */
export type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export interface UsersTable {
  id: Generated<string>;
  email: string;
  role: 'basic' | 'curator' | 'admin';
  account_type: Generated<string>;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: Generated<number>;
  name: string | null;
  hashed_key: string;
  display: string;
  user_id: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface KvStoreTable {
  key: string;
  value: unknown;
  updated_at: CreatedAt;
}

/**
 * The hand-kept database type. Each domain declares its tables in its own `<domain>.table.ts` and
 * they are joined here.
 */
export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  kv_store: KvStoreTable;
}
