import type { Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';

/** kas's helmet options: the CSP lets /api/docs load only its own scripts and styles. */
export function helmetOptions({ crossOrigin }: { crossOrigin: boolean }): Parameters<typeof helmet>[0] {
  return {
    contentSecurityPolicy: {
      directives: {
        'img-src': ["'self'", 'data:'],
        'style-src': ["'self'", "'unsafe-inline'"],
        'upgrade-insecure-requests': null,
      },
    },
    strictTransportSecurity: false,
    crossOriginResourcePolicy: { policy: crossOrigin ? 'cross-origin' : 'same-origin' },
  };
}

type HeaderStep = [name: string, value: string] | [removed: string];

function containsFunction(value: unknown, depth = 0): boolean {
  if (typeof value === 'function') return true;
  if (value === null || typeof value !== 'object' || depth > 5) return false;
  return Object.values(value).some((inner) => containsFunction(inner, depth + 1));
}

/**
 * helmet's middleware with these options, as one step. Options without functions (per-request values
 * such as CSP nonces) give the same headers on every answer, so they are recorded once here and set in
 * the same order, sparing helmet's chain of a dozen middlewares on every request. Any other options,
 * or helmet doing anything but set and remove headers, get helmet itself.
 */
export function securityHeaders(options: Parameters<typeof helmet>[0] = {}): RequestHandler {
  const middleware = helmet(options);
  if (containsFunction(options)) return middleware;
  const steps: HeaderStep[] = [];
  let plain = true;
  let passed = false;
  const recorder = {
    setHeader: (name: string, value: unknown) => {
      if (typeof value !== 'string') plain = false;
      steps.push([name, String(value)]);
    },
    removeHeader: (name: string) => steps.push([name]),
  };
  try {
    middleware(Object.create(null) as Request, recorder as unknown as Response, (error?: unknown) => {
      passed = error === undefined;
    });
  } catch {
    return middleware;
  }
  if (!plain || !passed) return middleware;
  return (_req, res, next) => {
    for (const step of steps) {
      if (step.length === 2) res.setHeader(step[0], step[1]);
      else res.removeHeader(step[0]);
    }
    next();
  };
}
