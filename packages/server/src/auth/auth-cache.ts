import type { ApiKeyDescriptor } from '../api-keys/api-keys.schemas.ts';
import type { Actor } from './roles.ts';

/** A credential's actor and its expiry (checked on every hit: time passes while it is cached). */
export interface CachedActor {
  actor: Actor;
  expires_at: Date | null;
}

/**
 * API key hash → actor, and the key list, for the embedded database only. The data directory lock guarantees one
 * process, and every change to keys or roles goes through this process and clears the cache, so a
 * cached answer is never stale. With a shared Postgres (several processes) there is no cache: every
 * request reads the database, so revocation holds at once across processes.
 */
export class AuthCache {
  readonly #entries = new Map<string, CachedActor>();
  /** The admin key list (without secrets), filled on first read. */
  keyList: readonly ApiKeyDescriptor[] | undefined;
  static readonly MAX_ENTRIES = 10_000;

  get(hash: string): CachedActor | undefined {
    return this.#entries.get(hash);
  }

  set(hash: string, entry: CachedActor): void {
    if (this.#entries.size >= AuthCache.MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(hash, entry);
  }

  /** Every write to keys, tokens, users, roles or the active flag calls this. */
  clear(): void {
    this.#entries.clear();
    this.keyList = undefined;
  }
}
