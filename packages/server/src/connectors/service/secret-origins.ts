import type { Actor } from '../../auth/roles.ts';
import { AppError } from '../../errors.ts';
import type { CredentialRow } from '../connectors.repository.ts';
import * as connectorsRepository from '../connectors.repository.ts';
import * as secretOriginsRepository from '../secret-origins.repository.ts';
import { type AnySource, SourceError } from '../sources/source.ts';
import { type Deps, MASK, openCredential } from './shared.ts';

/*
 * A credential's secrets are bound to the origins (scheme, host, port) they were entered for, so that
 * nobody who cannot read them (they are masked on every read) can have them sent elsewhere by
 * pointing a connector, or the credential's own token endpoint, at a server they control.
 *
 * - Entering the secrets (creating the credential, or updating it with every secret value given
 *   rather than the mask) leaves them unbound, with the one who entered them recorded.
 * - Unbound secrets go where the credential's CC pairs send them today (none for a new credential).
 *   The one who entered them may send them anywhere once: their next link or connector change binds
 *   the secrets to the origins the credential's connectors then use.
 * - Bound secrets go only to their origins. Any other change that would send them elsewhere is
 *   refused with SECRET_REENTRY_REQUIRED, whoever asks (admins too).
 */

interface Target {
  key: string;
  origin: string;
}

/** Where a connector with this configuration sends the credential's secrets. */
function targetsOf(source: AnySource, config: unknown, secrets: Record<string, unknown>): Target[] {
  if (!source.secretTargets) return [];
  const checkedConfig = source.validateConfig(config);
  const checkedCredential = source.validateCredential(secrets);
  // An invalid configuration or credential is refused before it is stored, and never run.
  if (!checkedConfig.ok || !checkedCredential.ok) return [];
  return source.secretTargets(checkedConfig.value, checkedCredential.value).map((t) => ({
    key: t.key,
    origin: new URL(t.url).origin,
  }));
}

function hasSecrets(source: AnySource, json: Record<string, unknown>): boolean {
  const visible = new Set(source.publicCredentialKeys ?? []);
  return Object.entries(json).some(([k, v]) => !visible.has(k) && v !== undefined && v !== null && v !== '');
}

/** Whether an update of `credential_json` gives every secret again (no value kept through the mask). */
export function reentersSecrets(
  given: Record<string, unknown> | undefined,
  current: Record<string, unknown>,
): boolean {
  return given !== undefined && !Object.entries(given).some(([k, v]) => v === MASK && k in current);
}

/** A connector the credential is linked to once the change is made: its source and configuration. */
export interface Link {
  connector_id: number;
  config: Record<string, unknown>;
}

/** The credential's links as stored, with `replace` overriding one connector's configuration or adding one. */
export async function linksOf(ctx: Deps, credentialId: number, replace?: Link): Promise<Link[]> {
  const connectors = await connectorsRepository.listConnectors(ctx.db, { credentialId });
  const links = connectors.map((c) => ({ connector_id: c.id, config: c.connector_specific_config }));
  if (!replace) return links;
  return [...links.filter((l) => l.connector_id !== replace.connector_id), replace];
}

/** Binds the secrets to the origins the change sends them to (applied once the change is stored). */
export interface PendingBinding {
  credentialId: number;
  origins: string[];
}

/**
 * Refuses a change that would send the credential's secrets (`secrets`: as they will be stored) to an
 * origin they are not bound to, naming the key that points there. Returns the binding to store once
 * the change is made, when it is the one who entered the secrets binding them.
 */
export async function checkSecretOrigins(
  ctx: Deps,
  {
    actor,
    credential,
    secrets,
    links,
  }: { actor: Actor; credential: CredentialRow; secrets?: Record<string, unknown>; links: Link[] },
): Promise<PendingBinding | null> {
  const source = ctx.sources.get(credential.source);
  const stored = openCredential(ctx, credential);
  const next = secrets ?? stored;
  if (!source?.secretTargets || !hasSecrets(source, next)) return null;
  const after = links.flatMap((l) => targetsOf(source, l.config, next));
  const binding = await secretOriginsRepository.findBinding(ctx.db, credential.id);
  const boundOrigins =
    binding?.secret_origins ??
    (await linksOf(ctx, credential.id)).flatMap((l) =>
      targetsOf(source, l.config, stored).map((t) => t.origin),
    );
  const bound = new Set(boundOrigins);
  const outside = after.find((t) => !bound.has(t.origin));
  if (!outside) return null;
  if (binding?.secret_origins === null && binding.secrets_entered_by === actor.user_id) {
    return { credentialId: credential.id, origins: [...new Set(after.map((t) => t.origin))] };
  }
  const where = bound.size
    ? `they are bound to ${[...bound].sort().join(', ')}`
    : 'they are bound to no address yet';
  throw new AppError(
    'SECRET_REENTRY_REQUIRED',
    `${outside.key} would send the secrets of credential ${credential.id} to ${outside.origin}, but ${where}: ` +
      `enter them again (update credential ${credential.id} giving every secret value, not the mask), then retry`,
  );
}

export async function applyBinding(ctx: Deps, pending: PendingBinding | null): Promise<void> {
  if (pending) await secretOriginsRepository.bind(ctx.db, pending.credentialId, pending.origins);
}

/** The secrets were just entered by `actor`: unbound until their next link or connector change. */
export async function secretsEntered(ctx: Deps, credentialId: number, actor: Actor): Promise<void> {
  await secretOriginsRepository.enteredBy(ctx.db, credentialId, actor.user_id);
}

/**
 * Before a run sends the secrets anywhere: every address it would use must be one they are bound to
 * (a second line behind the checks on change, for a configuration changed outside kas).
 */
export async function assertRunTargets(
  ctx: Deps,
  credentialId: number,
  source: AnySource,
  config: unknown,
  credential: unknown,
): Promise<void> {
  if (!source.secretTargets) return;
  const binding = await secretOriginsRepository.findBinding(ctx.db, credentialId);
  if (!binding?.secret_origins) return;
  const bound = new Set(binding.secret_origins);
  const stray = source.secretTargets(config, credential).find((t) => !bound.has(new URL(t.url).origin));
  if (stray)
    throw new SourceError(
      'config',
      `${stray.key} points to ${new URL(stray.url).origin}, not where credential ${credentialId}'s secrets were entered for: enter them again`,
    );
}
