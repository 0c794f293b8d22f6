/**
 * `IdempotencyStore`, the delivery-key half of the PostgreSQL store on its own (supplement
 * §5.2), kept for apps that claim keys outside the webhook pipeline: one row per (sender
 * identity, idempotency_key), bound to the RFC 8785 fingerprint of the first payload, with
 * one owner at a time. The owner holds a lease and a generation number; a takeover bumps
 * the generation, so an owner that comes back late can neither mark the key done nor renew
 * its lease. It runs on `PgDeliveryStore` (same tables, same one-statement batches).
 *
 * 3.2 compares fingerprints (409 on a changed payload), 3.1 does not (the first copy wins
 * silently). In both, a key whose publication is still under way is not "done", so its
 * duplicates get 503 and never a second publisher.
 */
import type { Pool } from '../../../shared/infra/pg.js';
import {
  heartbeat,
  MIN_RETENTION_SECONDS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_KEYS_PER_SENDER,
  type Claim,
  type ClaimResult,
  type ProtocolVersion,
} from '../delivery-store.js';
import { PgDeliveryStore } from './pg-delivery-store.js';

export { MIN_RETENTION_SECONDS, DEFAULT_LEASE_MS, DEFAULT_MAX_KEYS_PER_SENDER };
export type { Claim, ClaimResult, ProtocolVersion };

export interface IdempotencyStoreOptions {
  pool: Pool;
  /** PostgreSQL schema of the receiver's tables (default `receiver`). */
  schema?: string;
  protocolVersion: ProtocolVersion;
  /** How long a claim is held without renewal before another process may take it over. */
  leaseMs?: number;
  /** A sender's advertised `delivery_retry_horizon_seconds`, if any. */
  retryHorizonSeconds?: (sender: string) => number | undefined;
  /** Bound on stored keys per sender; new keys past it are answered 429. */
  maxKeysPerSender?: number;
  /** How often the per-sender key count is re-read (it is approximate across processes). */
  countRefreshMs?: number;
  /** Commit without waiting for the WAL flush (default true; see PgDeliveryStore). */
  asyncDoneMark?: boolean;
}

const NO_TASK = {
  taskId: null,
  at: null,
  status: null,
  taskType: null,
  value: null,
  source: 'webhook',
  notificationId: null,
} as const;

export class IdempotencyStore {
  readonly schema: string;
  readonly protocolVersion: ProtocolVersion;
  readonly leaseMs: number;
  private readonly store: PgDeliveryStore;
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(options: IdempotencyStoreOptions) {
    this.store = new PgDeliveryStore({
      ...options,
      synchronousCommit: !(options.asyncDoneMark ?? true),
    });
    this.schema = this.store.schema;
    this.protocolVersion = options.protocolVersion;
    this.leaseMs = this.store.leaseMs;
  }

  /** Creates or upgrades the tables (idempotent, safe from concurrent processes). */
  async migrate(): Promise<void> {
    await this.store.migrate();
  }

  /** max(24 h, the sender's advertised horizon), counted from first acceptance. */
  retentionSeconds(sender: string): number {
    return this.store.retentionSeconds(sender);
  }

  /** Claims (sender, key) for publication, or says why not (one owner across processes). */
  async claim(input: { sender: string; key: string; fingerprint: string }): Promise<ClaimResult> {
    const r = await this.store.accept({ ...input, observation: NO_TASK });
    if (r.kind === 'claimed') return { kind: 'claimed', claim: r.claim };
    if (r.kind === 'replayed' || r.kind === 'rate_abuse') return { kind: 'in_flight' };
    return r;
  }

  /** Marks the key done with an outcome; false when the claim was lost to a takeover. */
  complete(claim: Claim, outcome: string): Promise<boolean> {
    return this.store.complete(claim, outcome);
  }

  /** `complete` for many claims (they share one statement). */
  completeMany(items: Array<{ claim: Claim; outcome: string }>): Promise<boolean[]> {
    return Promise.all(items.map((i) => this.store.complete(i.claim, i.outcome)));
  }

  /** Gives the claim up after a failed publication, so the sender's retry can take it. */
  release(claim: Claim): Promise<void> {
    return this.store.release(claim);
  }

  /** Extends the lease; false when the claim was taken over meanwhile. */
  renew(claim: Claim): Promise<boolean> {
    return this.store.renew(claim);
  }

  /** Keeps a claim alive during a long publication (renewal every third of the lease). */
  heartbeat(claim: Claim): { stop(): void; lost(): boolean } {
    return heartbeat(this.store, claim);
  }

  /** Keys stored for a sender, read from the maintained counter (O(1)). */
  senderKeyCount(sender: string): Promise<number> {
    return this.store.senderKeyCount(sender);
  }

  /** Deletes keys (and task state) past their retention; returns how many rows. */
  purgeExpired(batch = 10_000): Promise<number> {
    return this.store.purgeExpired(batch);
  }

  /** Starts the purge job (errors are retried at the next tick). */
  startPurging(intervalMs = 60_000, onError: (err: unknown) => void = () => {}): void {
    this.stopPurging();
    this.purgeTimer = setInterval(() => {
      this.purgeExpired().catch(onError);
    }, intervalMs);
    this.purgeTimer.unref();
  }

  stopPurging(): void {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = null;
  }
}
