import type { ColumnType, Generated, Selectable } from 'kysely';
import type { CreatedAt, Json, Timestamp } from '../db/columns.ts';

type NullableTime = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

/** A client registered by dynamic client registration (RFC 7591); its secret, if any, encrypted. */
export interface OauthClientsTable {
  client_id: string;
  client_secret_encrypted: string | null;
  client_secret_expires_at: NullableTime;
  client_name: string | null;
  redirect_uris: string[];
  /** The registration as the client sent it (RFC 7591 metadata). */
  metadata: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

/** A person's approval of a client: the scopes and the resource its tokens are for. */
export interface OauthGrantsTable {
  id: Generated<number>;
  client_id: string;
  user_id: string;
  scopes: string[];
  resource: string;
  created_at: CreatedAt;
  last_used_at: NullableTime;
}

/** An authorization code, by hash: single use, minutes long, bound to its PKCE challenge and redirect URI. */
export interface OauthCodesTable {
  code_hash: string;
  client_id: string;
  user_id: string;
  scopes: string[];
  resource: string;
  redirect_uri: string;
  code_challenge: string;
  expires_at: Timestamp;
  created_at: CreatedAt;
}

/** An access or refresh token of a grant, by hash. */
export interface OauthTokensTable {
  token_hash: string;
  grant_id: number;
  kind: 'access' | 'refresh';
  expires_at: Timestamp;
  used_at: NullableTime;
  created_at: CreatedAt;
}

export interface OauthServerTables {
  oauth_clients: OauthClientsTable;
  oauth_grants: OauthGrantsTable;
  oauth_codes: OauthCodesTable;
  oauth_tokens: OauthTokensTable;
}

export type OauthClientRow = Selectable<OauthClientsTable>;
export type OauthGrantRow = Selectable<OauthGrantsTable>;
export type OauthCodeRow = Selectable<OauthCodesTable>;
