import { createRemoteJWKSet, customFetch, errors, type JWTPayload, jwtVerify } from 'jose';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { causeChain, type Logger } from '../logger.ts';
import type { OutboundFetch } from '../outbound/outbound.ts';
import type { Role } from './roles.ts';

/** Verified claims of a bearer token, and what the configuration makes of them. */
export interface OidcIdentity {
  email: string;
  /** The provider (`iss`) and its stable id of the person (`sub`): a person is linked to this pair. */
  issuer: string;
  subject: string;
  /** The token's `exp`. */
  expires_at: Date;
  /** The least role the configuration grants (admin emails, group mapping); `basic` otherwise. */
  role: Role;
}

export interface OidcVerifier {
  readonly issuer: string;
  readonly autoProvision: boolean;
  /** Verifies signature (JWKS from discovery, refreshed on an unknown key id), `iss`, `aud`, `exp`, `nbf`. */
  verify(token: string): Promise<OidcIdentity>;
}

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

function unauthenticated(detail: string): AppError {
  return new AppError('UNAUTHENTICATED', detail);
}

function describeFailure(error: unknown): AppError {
  if (error instanceof errors.JWTExpired) return unauthenticated('The OIDC token expired; sign in again');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return unauthenticated('The OIDC token is not valid yet (nbf)');
    return unauthenticated(
      `The OIDC token was rejected: its "${error.claim}" claim does not match this service`,
    );
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return unauthenticated('The OIDC token is signed with an algorithm this service does not accept');
  }
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWSSignatureVerificationFailed) {
    return unauthenticated('The OIDC token signature does not verify against the issuer keys');
  }
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) {
    return new AppError('SERVICE_UNAVAILABLE', 'The OIDC issuer keys could not be loaded; try again');
  }
  if (error instanceof errors.JOSEError) return unauthenticated('Invalid OIDC token');
  if (blockedByGuard(error))
    return new AppError(
      'SERVICE_UNAVAILABLE',
      'The OIDC issuer is at a private or loopback address, which the outbound guard refuses: an admin may allow it with KAS_OUTBOUND_ALLOWLIST',
      { cause: error },
    );
  return new AppError('SERVICE_UNAVAILABLE', 'The OIDC issuer could not be reached; try again', {
    cause: error,
  });
}

/** Whether the outbound guard refused the address (somewhere in the error's causes: jose wraps its fetch's). */
function blockedByGuard(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if ((current as { code?: unknown }).code === 'BLOCKED_ADDRESS') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The verifier for `KAS_OIDC_ISSUER`, or null when OIDC sign-in is off. Discovery runs on first use. */
export function createOidcVerifier(
  config: Config,
  fetch: OutboundFetch,
  logger?: Logger,
): OidcVerifier | null {
  const issuer = config.KAS_OIDC_ISSUER;
  const audience = config.KAS_OIDC_AUDIENCE;
  if (!issuer || !audience) return null;
  const adminEmails = new Set(list(config.KAS_OIDC_ADMIN_EMAILS).map((e) => e.toLowerCase()));
  const adminGroups = new Set(list(config.KAS_OIDC_ADMIN_GROUPS));
  const curatorGroups = new Set(list(config.KAS_OIDC_CURATOR_GROUPS));
  const algorithms = list(config.KAS_OIDC_ALGORITHMS);
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;

  async function discover() {
    const url = `${issuer!.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, { headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`OIDC discovery answered ${res.status}`);
    const metadata = (await res.json()) as { issuer?: string; jwks_uri?: string };
    if (metadata.issuer !== issuer) throw new Error(`OIDC discovery names issuer ${metadata.issuer}`);
    if (!metadata.jwks_uri) throw new Error('OIDC discovery has no jwks_uri');
    // jose refetches the key set when a token names a key id it does not know (rotation), at most every 30 s.
    return createRemoteJWKSet(new URL(metadata.jwks_uri), {
      [customFetch]: (url, init) => fetch(url, init as RequestInit),
      cooldownDuration: config.KAS_OIDC_JWKS_COOLDOWN_MS,
    });
  }

  function roleOf(email: string, payload: JWTPayload): Role {
    const claim = payload[config.KAS_OIDC_GROUPS_CLAIM];
    const groups = Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : [];
    if (adminEmails.has(email.toLowerCase()) || groups.some((g) => adminGroups.has(g))) return 'admin';
    if (groups.some((g) => curatorGroups.has(g))) return 'curator';
    return 'basic';
  }

  return {
    issuer,
    autoProvision: config.KAS_OIDC_AUTO_PROVISION,
    async verify(token) {
      keys ??= discover().catch((error) => {
        keys = undefined;
        throw error;
      });
      let payload: JWTPayload;
      try {
        const jwks = await keys;
        ({ payload } = await jwtVerify(token, jwks, {
          issuer,
          audience,
          algorithms,
          clockTolerance: config.KAS_OIDC_CLOCK_SKEW_S,
          requiredClaims: ['exp', 'sub'],
        }));
      } catch (error) {
        const failure = describeFailure(error);
        // The provider failing is the operator's to fix (a token refused is the caller's): logged with
        // the endpoint and the real cause, which the answer does not carry.
        if (failure.error_code === 'SERVICE_UNAVAILABLE')
          logger?.warn(
            {
              issuer,
              endpoint: `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
              cause: causeChain(error),
            },
            'OIDC issuer failed',
          );
        throw failure;
      }
      const email = payload.email;
      if (typeof email !== 'string' || !email.includes('@')) {
        throw unauthenticated('The OIDC token has no email claim: request the "email" scope');
      }
      // Strictly boolean `true`: a string "true"/"false" is a provider bug or a forgery, not a verification.
      const verified = payload.email_verified;
      if (verified === undefined ? !config.KAS_OIDC_TRUST_UNVERIFIED_EMAIL : verified !== true) {
        throw unauthenticated(
          verified === undefined
            ? 'The OIDC token does not say the email is verified (no "email_verified" claim)'
            : 'The OIDC token carries an unverified email',
        );
      }
      return {
        email: email.toLowerCase(),
        issuer,
        subject: payload.sub!,
        expires_at: new Date(payload.exp! * 1000),
        role: roleOf(email, payload),
      };
    },
  };
}
