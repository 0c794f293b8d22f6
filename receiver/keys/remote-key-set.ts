/**
 * One `jwks_uri`'s key set, cached: fresh for `ttlMs`; after a failed fetch the previous
 * good set is kept (a failed or malformed fetch never makes a known kid unknown) and the
 * URL is not retried for `negativeTtlMs`; on an unknown kid the caller may ask for one
 * refetch, at most one per `refetchCooldownMs` (the cooldown sits between refetches, never
 * before the first). Concurrent callers share one in-flight fetch.
 */
import type { Logger } from '../../shared/infra/logger.js';
import { FETCH_BUDGETS, fetchJson, type RawFetch } from './fetch-json.js';
import { parseKeySet, type KeySet } from './key-set.js';

export type Clock = () => number;

export interface CachePolicy {
  /** Successful fetch stays fresh this long (ms); capped at 30 min. */
  ttlMs: number;
  /** After a failed fetch, no new attempt for this long (ms); capped at 60 s. */
  negativeTtlMs: number;
  /** Minimum time between two unknown-kid refetches of the same URL (ms). */
  refetchCooldownMs: number;
}

export const DEFAULT_CACHE_POLICY: CachePolicy = {
  ttlMs: 5 * 60_000,
  negativeTtlMs: 30_000,
  refetchCooldownMs: 30_000,
};

export function clampPolicy(p: Partial<CachePolicy>): CachePolicy {
  const merged = { ...DEFAULT_CACHE_POLICY, ...p };
  return {
    ttlMs: Math.min(Math.max(merged.ttlMs, 0), 30 * 60_000),
    negativeTtlMs: Math.min(Math.max(merged.negativeTtlMs, 0), 60_000),
    refetchCooldownMs: Math.max(merged.refetchCooldownMs, 0),
  };
}

export interface FetchSettings {
  fetch?: RawFetch;
  allowLoopback?: boolean;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  logger?: Logger;
}

export interface KeySetView {
  keys: KeySet | null;
  /** True when this call itself fetched, so an immediate miss-refetch would be pointless. */
  fetchedNow: boolean;
}

export class RemoteKeySet {
  readonly url: string;
  private good: KeySet | null = null;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private failedAt = Number.NEGATIVE_INFINITY;
  private lastMissRefetchAt: number | null = null;
  private inflight: Promise<void> | null = null;
  /** Counts fetch attempts (observability and tests). */
  fetches = 0;

  constructor(
    url: string,
    private readonly clock: Clock,
    private readonly policy: CachePolicy,
    private readonly settings: FetchSettings,
  ) {
    this.url = url;
  }

  /** True when a fetch was tried and no good set was ever loaded (the keys are unavailable). */
  /** Unix ms of the last successful fetch, or null (operator console). */
  lastFetchMs(): number | null {
    return Number.isFinite(this.fetchedAt) ? this.fetchedAt : null;
  }

  unavailable(): boolean {
    return this.good === null && this.fetches > 0 && this.inflight === null;
  }

  /**
   * The last good set whatever its age (the operator console: a sender whose keys were
   * verified shows them after the TTL too, until a refetch replaces them).
   */
  held(): KeySet | null {
    return this.good;
  }

  /** The cached set if it is fresh, without I/O. */
  peek(): KeySet | null {
    return this.clock() - this.fetchedAt < this.policy.ttlMs ? this.good : null;
  }

  /** The current set, fetching when stale unless a recent failure is negatively cached. */
  async view(): Promise<KeySetView> {
    const now = this.clock();
    if (this.good && now - this.fetchedAt < this.policy.ttlMs) {
      return { keys: this.good, fetchedNow: false };
    }
    if (now - this.failedAt < this.policy.negativeTtlMs) {
      return { keys: this.good, fetchedNow: false };
    }
    await this.refresh();
    return { keys: this.good, fetchedNow: true };
  }

  /** One refetch for an unknown kid, unless another ran within the cooldown. */
  async refetchForMiss(): Promise<boolean> {
    const now = this.clock();
    if (
      this.lastMissRefetchAt !== null &&
      now - this.lastMissRefetchAt < this.policy.refetchCooldownMs
    ) {
      return false;
    }
    this.lastMissRefetchAt = now;
    await this.refresh();
    return true;
  }

  private refresh(): Promise<void> {
    this.inflight ??= this.load().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  /** The message of the last failed fetch, until one succeeds (for logging each cause once). */
  private lastFailure: string | null = null;

  private async load(): Promise<void> {
    this.fetches++;
    try {
      const doc = await fetchJson(this.url, {
        fetch: this.settings.fetch,
        maxBytes: FETCH_BUDGETS.jwksBytes,
        allowLoopback: this.settings.allowLoopback,
        connectTimeoutMs: this.settings.connectTimeoutMs,
        totalTimeoutMs: this.settings.totalTimeoutMs,
      });
      if (doc.notModified) return;
      this.good = parseKeySet(doc.value);
      this.fetchedAt = this.clock();
      this.failedAt = Number.NEGATIVE_INFINITY;
    } catch (err) {
      this.failedAt = this.clock();
      const message = (err as Error).message;
      // Once per distinct cause; repeats of the same failure go to debug.
      const log = message === this.lastFailure ? 'debug' : 'warn';
      this.lastFailure = message;
      this.settings.logger?.[log](
        { jwksUri: this.url, err: message, keptPrevious: this.good !== null },
        `JWKS fetch failed: ${message}`,
      );
      return;
    }
    this.lastFailure = null;
  }
}
