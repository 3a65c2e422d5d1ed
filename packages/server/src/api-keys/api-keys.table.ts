import type { ColumnType, Generated, Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface ApiKeysTable {
  id: Generated<number>;
  name: string | null;
  hashed_key: string;
  display: string;
  user_id: string;
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  allow_personal_tokens: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface ApiKeysTables {
  api_keys: ApiKeysTable;
}

export type ApiKey = Selectable<ApiKeysTable>;
