import type { Generated, Selectable } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

export interface DocumentSetsTable {
  id: Generated<number>;
  name: string;
  description: Generated<string>;
  is_public: Generated<boolean>;
  owner_id: string | null;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface DocumentSetGroupsTable {
  document_set_id: number;
  group_id: number;
}

export interface DocumentSetUsersTable {
  document_set_id: number;
  user_id: string;
}

export interface DocumentSetCcPairsTable {
  document_set_id: number;
  cc_pair_id: number;
}

export interface DocumentSetsTables {
  document_sets: DocumentSetsTable;
  document_set_groups: DocumentSetGroupsTable;
  document_set_users: DocumentSetUsersTable;
  document_set_cc_pairs: DocumentSetCcPairsTable;
}

export type DocumentSet = Selectable<DocumentSetsTable>;
