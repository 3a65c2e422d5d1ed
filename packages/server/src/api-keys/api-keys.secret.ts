import { hash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'svck-';

/** A new key: the prefix and 32 random bytes as 43 base64url characters. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** Keys are 256-bit random values, so an unsalted SHA-256 is a safe, fast lookup hash. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function displayApiKey(key: string): string {
  const secret = key.slice(API_KEY_PREFIX.length);
  return `${API_KEY_PREFIX}${secret.slice(0, 4)}****${secret.slice(-4)}`;
}

/** Reads the key from `Authorization: Bearer <key>` (a raw key is accepted too, as the reference does). */
export function parseAuthorizationHeader(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const value = header.trim();
  const match = /^Bearer\s+(.+)$/i.exec(value);
  return (match ? match[1]! : value).trim() || undefined;
}
