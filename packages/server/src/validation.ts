import type { ZodError } from 'zod';

/** A readable one-line summary of a Zod error: `field.path: message; other: message`. */
export function formatZodError(error: ZodError): string {
  const parts = error.issues.slice(0, 10).map((issue) => {
    const path = issue.path.length ? issue.path.join('.') : 'body';
    return `${path}: ${issue.message}`;
  });
  return parts.join('; ') || 'Invalid request';
}
