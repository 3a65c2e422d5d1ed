import { hash, randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';

/**
 * Every credential kind in one place: how each looks, is generated, hashed, shown masked and expires.
 * API keys (`svck-`) and personal access tokens (`kpat-`) are 256-bit random values stored only as
 * their SHA-256 hash; OIDC tokens are compact JWS verified against the provider (`auth/oidc.ts`).
 */

export const API_KEY_PREFIX = 'svck-';
/** Personal access tokens look different from `svck-` API keys so logs and secret scanners can tell them apart. */
export const PERSONAL_TOKEN_PREFIX = 'kpat-';
/** OAuth access and refresh tokens kas issues to MCP clients (kas as their authorization server). */
export const OAUTH_ACCESS_TOKEN_PREFIX = 'kmat-';
export const OAUTH_REFRESH_TOKEN_PREFIX = 'kmrt-';

/** How the caller proved who they are. */
export type CredentialKind = 'api_key' | 'personal_token' | 'oidc' | 'oauth';

/** A new key: the prefix and 32 random bytes as 43 base64url characters. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function generatePersonalToken(): string {
  return PERSONAL_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** Keys and tokens are 256-bit random values, so an unsalted SHA-256 is a safe, fast lookup hash. */
export function hashCredential(credential: string): string {
  return hash('sha256', credential, 'hex');
}

/** The masked form safe to show: the prefix, the first and the last four characters of the secret. */
export function displayCredential(credential: string): string {
  const prefix = credential.startsWith(PERSONAL_TOKEN_PREFIX) ? PERSONAL_TOKEN_PREFIX : API_KEY_PREFIX;
  const secret = credential.slice(prefix.length);
  return `${prefix}${secret.slice(0, 4)}****${secret.slice(-4)}`;
}

/** Reads the credential from `Authorization: Bearer <credential>` (a raw value is accepted too, as the reference does). */
export function parseAuthorizationHeader(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const value = header.trim();
  const match = /^Bearer\s+(.+)$/i.exec(value);
  return (match ? match[1]! : value).trim() || undefined;
}

/** A compact JWS: three base64url parts. API keys and personal tokens never look like this. */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(credential);
}

export function credentialKind(credential: string): CredentialKind {
  if (looksLikeJwt(credential)) return 'oidc';
  if (credential.startsWith(OAUTH_ACCESS_TOKEN_PREFIX)) return 'oauth';
  return credential.startsWith(PERSONAL_TOKEN_PREFIX) ? 'personal_token' : 'api_key';
}

/** Lifetime in days from now; null or absent: never expires. */
export const ExpiresInDays = z
  .number()
  .int()
  .positive()
  .max(36_500)
  .nullable()
  .meta({ description: 'Days until the credential expires; null or absent: never' });

/** `expires_in_days` → the instant; null: never. */
export function expiryFrom(days: number | null | undefined, now = Date.now()): Date | null {
  return days ? new Date(now + days * 86_400_000) : null;
}

/** The earlier of two expiries (null: never). A credential never outlives the one that created it. */
export function earliestExpiry(a: Date | null, b: Date | null): Date | null {
  if (a === null) return b;
  if (b === null) return a;
  return a.getTime() <= b.getTime() ? a : b;
}

export function isExpired(expiresAt: Date | null, now = Date.now()): boolean {
  return expiresAt !== null && expiresAt.getTime() <= now;
}

/** The domain of the email every API key's service-account user gets: never a person's address. */
export const SERVICE_ACCOUNT_EMAIL_DOMAIN = 'service-account.kas';

export function serviceAccountEmail(): string {
  return `api-key-${randomUUID()}@${SERVICE_ACCOUNT_EMAIL_DOMAIN}`;
}

export function isServiceAccountEmail(email: string): boolean {
  return email.toLowerCase().endsWith(`@${SERVICE_ACCOUNT_EMAIL_DOMAIN}`);
}
