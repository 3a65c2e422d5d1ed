import { type ZodError, z } from 'zod';

/** A readable one-line summary of a Zod error: `field.path: message; other: message`. */
export function formatZodError(error: ZodError): string {
  const parts = error.issues.slice(0, 10).map((issue) => {
    const path = issue.path.length ? issue.path.join('.') : 'body';
    return `${path}: ${issue.message}`;
  });
  return parts.join('; ') || 'Invalid request';
}

/** `String.prototype.isWellFormed` (Node 20+; the compiler's `lib` predates it). */
export function isWellFormed(value: string): boolean {
  return (value as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * A string that is well-formed Unicode: no unpaired UTF-16 surrogate (JSON's `"\ud800"` is one). The
 * databases store text as UTF-8, where a lone surrogate becomes U+FFFD, so two ids that differ only there
 * would be one row. Every id, key and name that identifies something is this schema (refused with 422,
 * the field named); free text (section text, messages, prompts) is stored with U+FFFD in their place.
 */
export const WellFormedString = z.string().refine(isWellFormed, {
  message: 'must be well-formed Unicode (no unpaired UTF-16 surrogates)',
  abort: true,
});
