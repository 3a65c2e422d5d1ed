import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt } from '../db/columns.ts';

type NullableTime = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface PersonalAccessTokensTable {
  id: Generated<number>;
  user_id: string;
  name: string;
  hashed_token: string;
  display: string;
  expires_at: NullableTime;
  last_used_at: NullableTime;
  created_at: CreatedAt;
  /** The API key the token lives and dies with (it minted the token, directly or through tokens). */
  created_by_api_key_id: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A person's stable id at the OIDC provider, linked on their first sign-in. */
export interface OidcSubjectsTable {
  issuer: string;
  subject: string;
  user_id: string;
  created_at: CreatedAt;
}

/** A user's account at a source (`github` login, `slack` user id, Google email, Confluence account id). */
export interface UserExternalIdentitiesTable {
  user_id: string;
  source: string;
  external_id: string;
  created_at: CreatedAt;
}

/** Members of a source's groups as connectors report them, by principal (`email:…`, `user:<source>:…`). */
export interface ExternalGroupMembersTable {
  cc_pair_id: number | null;
  source: string;
  group_id: string;
  member: string;
}

export interface IdentityTables {
  personal_access_tokens: PersonalAccessTokensTable;
  user_external_identities: UserExternalIdentitiesTable;
  external_group_members: ExternalGroupMembersTable;
  oidc_subjects: OidcSubjectsTable;
}
