import { z } from 'zod';
import type { CredentialKind } from './credential.ts';

/** `limited`: chat and reading agents only. */
export const Role = z.enum(['limited', 'basic', 'curator', 'admin']).meta({ id: 'Role' });
export type Role = z.infer<typeof Role>;

const RANK: Record<Role, number> = { limited: -1, basic: 0, curator: 1, admin: 2 };

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}

/** How the caller proved who they are. */
export type Credential = CredentialKind;

/**
 * Who is calling: the service-account user behind an API key, or a person signed in with a personal
 * access token or an OIDC bearer token. Every access rule reads only the actor.
 */
export interface Actor {
  user_id: string;
  role: Role;
  /** The API key used; null for personal tokens and OIDC. */
  api_key_id: number | null;
  email: string;
  credential: Credential;
  /** Rate limits count per credential: `key:<id>`, `pat:<id>` or `user:<id>`. */
  rate_limit_key: string;
  /** The verified OIDC bearer token (OAuth pass-through forwards it); null for keys and personal tokens. */
  oidc_token: string | null;
  /**
   * When the credential stops working (for a personal token minted by a key: the earlier of the two);
   * null: never. A credential this actor creates expires no later.
   */
  expires_at: Date | null;
  /**
   * The API key this credential lives and dies with: the key itself, or the key that minted this
   * personal token (directly or through other tokens). Null for a person's own credentials.
   */
  bound_api_key_id: number | null;
  /**
   * Set for an OAuth access token (kas as the MCP authorization server): the grant it belongs to, the
   * client, the scopes the person granted and the resource (audience) the token is bound to. The
   * token acts with the person's current role, narrowed to these scopes.
   */
  oauth?: { grant_id: number; client_id: string; scopes: readonly string[]; resource: string } | undefined;
}

/** The actor of an API key's service-account user. */
export function apiKeyActor(row: {
  user_id: string;
  role: Role;
  api_key_id: number;
  email?: string;
  expires_at?: Date | null;
}): Actor {
  return {
    user_id: row.user_id,
    role: row.role,
    api_key_id: row.api_key_id,
    email: row.email ?? '',
    credential: 'api_key',
    rate_limit_key: `key:${row.api_key_id}`,
    oidc_token: null,
    expires_at: row.expires_at ?? null,
    bound_api_key_id: row.api_key_id,
  };
}
