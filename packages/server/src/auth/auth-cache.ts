import type { Actor } from './roles.ts';

/** A credential's actor and its expiry (checked on every hit: time passes while it is cached). */
export interface CachedActor {
  actor: Actor;
  expires_at: Date | null;
}

/**
 * API key hash → actor, and the key list. Embedded: the data directory lock guarantees one process, and
 * every change to keys or roles goes through this process and clears the cache, so a cached answer is
 * never stale. On a shared Postgres the subclass `PgAuthCache` adds cross-process invalidation and
 * serves only while its listener is healthy.
 *
 * A read that missed the cache stores its result only if no invalidation happened since the read began
 * (`generation`), so a load racing with a write can never put the old row back.
 */
export class AuthCache {
  readonly #entries = new Map<string, CachedActor>();
  #keyList: readonly unknown[] | undefined;
  #generation = 0;
  static readonly MAX_ENTRIES = 10_000;

  /** Whether the cache may be served from now (always, embedded). */
  usable(): boolean {
    return true;
  }

  /** Read before a database load; pass to `set` / `setKeyList`. */
  get generation(): number {
    return this.#generation;
  }

  get(hash: string): CachedActor | undefined {
    return this.usable() ? this.#entries.get(hash) : undefined;
  }

  set(hash: string, entry: CachedActor, generation: number): void {
    if (generation !== this.#generation || !this.usable()) return;
    if (this.#entries.size >= AuthCache.MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(hash, entry);
  }

  /**
   * The admin key list (without secrets), filled on first read by the api-keys service, which alone
   * knows its shape (the cache sits below the domains).
   */
  get keyList(): readonly unknown[] | undefined {
    return this.usable() ? this.#keyList : undefined;
  }

  setKeyList(list: readonly unknown[], generation: number): void {
    if (generation === this.#generation && this.usable()) this.#keyList = list;
  }

  /** Drops this process's entries at once. */
  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#keyList = undefined;
  }

  /**
   * Every write to keys, tokens, users, roles or the active flag awaits this after committing: when it
   * resolves, no process serves the old state any more.
   */
  async invalidate(): Promise<void> {
    this.clear();
  }

  async close(): Promise<void> {}
}
