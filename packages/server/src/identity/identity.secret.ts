import { randomBytes } from 'node:crypto';

/** Personal access tokens look different from `svck-` API keys so logs and secret scanners can tell them apart. */
export const PERSONAL_TOKEN_PREFIX = 'kpat-';

export function generatePersonalToken(): string {
  return PERSONAL_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function displayPersonalToken(token: string): string {
  const secret = token.slice(PERSONAL_TOKEN_PREFIX.length);
  return `${PERSONAL_TOKEN_PREFIX}${secret.slice(0, 4)}****${secret.slice(-4)}`;
}
