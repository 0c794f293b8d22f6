/**
 * The delivery-key store (supplement §5.2): one row per (sender identity, idempotency_key)
 * in PostgreSQL, bound to the RFC 8785 fingerprint of the first payload, with one owner at
 * a time. The owner holds a lease and a generation number; a takeover bumps the generation,
 * so an owner that comes back late can neither mark the key done nor renew its lease.
 *
 * The table answers both protocol versions: 3.2 compares fingerprints (409 on a changed
 * payload), 3.1 does not (the first copy wins silently). In both, a key whose publication
 * is still under way is not "done", so its duplicates get 503 and never a second publisher.
 */
import { randomUUID } from 'node:crypto';
import { assertSchemaName, migrate, type Pool } from '../../shared/infra/pg.js';
import { prepared, withValues, type PreparedQuery } from '../../shared/infra/prepared.js';
import { IDEMPOTENCY_MIGRATIONS } from './schema.js';

export type ProtocolVersion = '3.1' | '3.2';

/** Retention floor of the spec: dedup state lives at least 24 hours. */
export const MIN_RETENTION_SECONDS = 86_400;
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_MAX_KEYS_PER_SENDER = 5_000_000;

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
  /** How often the per-sender key count is re-read from the table (it is approximate). */
  countRefreshMs?: number;
  /**
   * Commit the done-mark without waiting for its WAL flush (default true). Losing it takes a
   * database crash, and then costs at most one republication of that key after its lease
   * (the publication already happened; nothing is lost). The claim itself and the queue
   * insert always commit synchronously.
   */
  asyncDoneMark?: boolean;
}

/** A held claim: the fence a publication carries until it marks the key done. */
export interface Claim {
  readonly sender: string;
  readonly key: string;
  readonly owner: string;
  readonly generation: number;
  /** True when the claim was taken over from an owner whose lease ran out. */
  readonly takeover: boolean;
}

export type ClaimResult =
  | { kind: 'claimed'; claim: Claim }
  | { kind: 'in_flight' }
  | { kind: 'done'; outcome: string | null }
  | { kind: 'conflict' }
  | { kind: 'over_limit' };

interface SenderCount {
  count: number;
  readAt: number;
  refreshing: boolean;
}

export class IdempotencyStore {
  readonly schema: string;
  readonly protocolVersion: ProtocolVersion;
  readonly leaseMs: number;
  private readonly pool: Pool;
  private readonly horizon: (sender: string) => number | undefined;
  private readonly maxKeys: number;
  private readonly countRefreshMs: number;
  private readonly asyncDoneMark: boolean;
  private readonly counts = new Map<string, SenderCount>();
  private readonly firstCounts = new Map<string, Promise<number>>();
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(options: IdempotencyStoreOptions) {
    this.pool = options.pool;
    this.schema = assertSchemaName(options.schema ?? 'receiver');
    this.protocolVersion = options.protocolVersion;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.horizon = options.retryHorizonSeconds ?? (() => undefined);
    this.maxKeys = options.maxKeysPerSender ?? DEFAULT_MAX_KEYS_PER_SENDER;
    this.countRefreshMs = options.countRefreshMs ?? 5_000;
    this.asyncDoneMark = options.asyncDoneMark ?? true;
    const s = this.schema;
    this.sql = {
      complete: prepared(
        'idem_complete',
        `SELECT ${s}.idem_complete($1, $2, $3, $4, $5, $6) AS ok`,
      ),
      completeMany: prepared(
        'idem_complete_many',
        `SELECT b.ord::int AS ord,
                ${s}.idem_complete(b.sender, b.key, b.owner, b.gen, b.outcome, $6) AS ok
         FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[])
           WITH ORDINALITY AS b(sender, key, owner, gen, outcome, ord)`,
      ),
    };
  }

  private readonly sql: { complete: PreparedQuery; completeMany: PreparedQuery };

  /** Creates or upgrades the tables (idempotent, safe from concurrent processes). */
  async migrate(): Promise<void> {
    await migrate(this.pool, this.schema, IDEMPOTENCY_MIGRATIONS);
  }

  /** max(24 h, the sender's advertised horizon), counted from first acceptance. */
  retentionSeconds(sender: string): number {
    const h = this.horizon(sender);
    return Math.max(MIN_RETENTION_SECONDS, Number.isFinite(h) ? Math.ceil(h as number) : 0);
  }

  /**
   * Claims (sender, key) for publication, or says why not. Row lock and decision happen in
   * one statement on the server, so concurrent claimants across processes get one owner.
   */
  async claim(input: { sender: string; key: string; fingerprint: string }): Promise<ClaimResult> {
    if (await this.atBound(input.sender, input.key)) return { kind: 'over_limit' };
    const { args, owner } = this.claimArgs(input);
    const { rows } = await this.pool.query<{
      result: string;
      generation: number;
      outcome: string | null;
    }>(`SELECT * FROM ${this.schema}.idem_claim($1, $2, $3, $4, $5, $6, $7)`, args);
    return this.toResult(rows[0], { sender: input.sender, key: input.key, owner });
  }

  /**
   * True when the sender is at its storage bound and this key is not stored yet (past the
   * bound, keys already stored are still answered normally; only new keys are refused).
   */
  async atBound(sender: string, key: string): Promise<boolean> {
    if (!(await this.overLimit(sender))) return false;
    const { rowCount } = await this.pool.query(
      `SELECT 1 FROM ${this.schema}.idempotency_keys WHERE sender = $1 AND idempotency_key = $2`,
      [sender, key],
    );
    return !rowCount;
  }

  /** @internal the parameters of `idem_claim`, shared with the pipeline's accept call. */
  claimArgs(input: { sender: string; key: string; fingerprint: string }): {
    args: unknown[];
    owner: string;
  } {
    const owner = randomUUID();
    return {
      owner,
      args: [
        input.sender,
        input.key,
        input.fingerprint,
        owner,
        this.leaseMs,
        this.retentionSeconds(input.sender),
        this.protocolVersion === '3.2',
      ],
    };
  }

  /** @internal shared with the combined accept call of the pipeline. */
  toResult(
    row: { result: string; generation: number; outcome: string | null } | undefined,
    ids: { sender: string; key: string; owner: string },
  ): ClaimResult {
    switch (row?.result) {
      case 'claimed':
      case 'taken_over':
        this.bump(ids.sender);
        return {
          kind: 'claimed',
          claim: { ...ids, generation: row.generation, takeover: row.result === 'taken_over' },
        };
      case 'done':
        return { kind: 'done', outcome: row.outcome };
      case 'conflict':
        return { kind: 'conflict' };
      default:
        return { kind: 'in_flight' };
    }
  }

  /**
   * Marks the key durably acknowledged with an outcome (`published`, `stale`, `duplicate`,
   * `conflict`...). Returns false when the claim was lost to a takeover: the caller must not
   * answer 2xx for it.
   */
  async complete(claim: Claim, outcome: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ ok: boolean }>(
      withValues(this.sql.complete, [
        claim.sender,
        claim.key,
        claim.owner,
        claim.generation,
        outcome,
        this.asyncDoneMark,
      ]),
    );
    return rows[0]?.ok === true;
  }

  /** `complete` for many claims in one statement (the pipeline's batcher). */
  async completeMany(items: Array<{ claim: Claim; outcome: string }>): Promise<boolean[]> {
    const { rows } = await this.pool.query<{ ord: number; ok: boolean }>(
      withValues(this.sql.completeMany, [
        items.map((i) => i.claim.sender),
        items.map((i) => i.claim.key),
        items.map((i) => i.claim.owner),
        items.map((i) => i.claim.generation),
        items.map((i) => i.outcome),
        this.asyncDoneMark,
      ]),
    );
    const out = new Array<boolean>(items.length).fill(false);
    for (const r of rows) out[r.ord - 1] = r.ok === true;
    return out;
  }

  /** Gives the claim up after a failed publication, so the sender's retry can take it. */
  async release(claim: Claim): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.schema}.idempotency_keys SET lease_until = clock_timestamp() - interval '1 millisecond'
       WHERE sender = $1 AND idempotency_key = $2 AND owner = $3 AND generation = $4
         AND state = 'processing'`,
      [claim.sender, claim.key, claim.owner, claim.generation],
    );
  }

  /** Extends the lease; false when the claim was taken over meanwhile. */
  async renew(claim: Claim): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE ${this.schema}.idempotency_keys
         SET lease_until = clock_timestamp() + $5 * interval '1 millisecond'
       WHERE sender = $1 AND idempotency_key = $2 AND owner = $3 AND generation = $4
         AND state = 'processing'`,
      [claim.sender, claim.key, claim.owner, claim.generation, this.leaseMs],
    );
    return rowCount === 1;
  }

  /**
   * Keeps a claim alive during a long publication (renewal every third of the lease).
   * `lost()` tells whether a renewal found the claim gone.
   */
  heartbeat(claim: Claim): { stop(): void; lost(): boolean } {
    let lost = false;
    const timer = setInterval(
      () => {
        this.renew(claim).then(
          (ok) => {
            if (!ok) lost = true;
          },
          () => {},
        );
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    timer.unref();
    return { stop: () => clearInterval(timer), lost: () => lost };
  }

  /** Deletes keys past their retention; returns how many. Run by a job, not per request. */
  async purgeExpired(batch = 10_000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM ${this.schema}.idempotency_keys WHERE ctid IN (
           SELECT ctid FROM ${this.schema}.idempotency_keys WHERE expires_at < now() LIMIT $1)`,
        [batch],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < batch) break;
    }
    if (total > 0) this.counts.clear();
    return total;
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

  private bump(sender: string): void {
    const c = this.counts.get(sender);
    if (c) c.count++;
  }

  /**
   * Whether the sender is at its bound. The count is read from the table at most every
   * `countRefreshMs` (in the background once known) and incremented locally between reads,
   * so the bound is approximate across processes by design: it protects storage, it is not
   * an exact quota.
   */
  private async overLimit(sender: string): Promise<boolean> {
    let c = this.counts.get(sender);
    const now = Date.now();
    if (!c) {
      // First sight of a sender: concurrent deliveries share one count.
      let first = this.firstCounts.get(sender);
      if (!first) {
        first = this.countKeys(sender).finally(() => this.firstCounts.delete(sender));
        this.firstCounts.set(sender, first);
      }
      const count = await first;
      c = this.counts.get(sender) ?? { count, readAt: now, refreshing: false };
      this.counts.set(sender, c);
    } else if (now - c.readAt > this.countRefreshMs && !c.refreshing) {
      const entry = c;
      entry.refreshing = true;
      this.countKeys(sender)
        .then((n) => {
          entry.count = n;
          entry.readAt = Date.now();
        })
        .catch(() => {})
        .finally(() => {
          entry.refreshing = false;
        });
    }
    return c.count >= this.maxKeys;
  }

  private async countKeys(sender: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM ${this.schema}.idempotency_keys
         WHERE sender = $1 LIMIT $2) x`,
      [sender, this.maxKeys + 1],
    );
    return Number(rows[0]?.n ?? 0);
  }
}
