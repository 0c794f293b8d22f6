/**
 * The (keyid, nonce) replay cache in PostgreSQL (supplement §2.9), shared by every receiver
 * instance and durable across restarts (a per-pod cache is non-conformant; Redis here keeps
 * nothing on disk).
 *
 * Layout. `replay_nonces(keyid, nonce)` is the set itself: its primary key makes
 * "exactly one of N concurrent inserts of a nonce wins" a property of the index.
 * `replay_counts(keyid, shard, n)` counts rows per keyid for the caps. One counter row per
 * keyid would serialise a sender's inserts on a row lock held until commit (one WAL flush
 * each); spreading increments over 16 shard rows lets concurrent commits share a flush.
 *
 * Insert is one statement, one round trip: read the counters, insert the nonce if under
 * both caps (a live duplicate is a conflict; an expired one is replaced in place), bump a
 * shard counter only for a new row. Concurrent calls are coalesced (MicroBatcher) into one
 * such statement over arrays, so one commit serves many verified events; the caps are
 * applied per row in arrival order inside a batch (exact), and across batches against a
 * snapshot, so K batches racing at the cap may overshoot it by at most K-1 batches: the cap
 * bounds storage, it is not a quota. Same-nonce inserts racing in one batch or across
 * batches: exactly one 'inserted' (the primary key decides).
 * Expired rows are ignored by every read and removed by `purgeExpired()`, which also lowers
 * the counters in the same transaction; until then they count toward the cap (and `atCap`
 * purges a capped keyid's expired rows before answering).
 *
 * TTL. The verifier asks for `(expires − now) + 60` s. Stored TTLs are raised to
 * `minTtlSeconds` (default 360, the reference SDK's floor): in normal traffic that is what
 * the formula gives anyway (expires = created + 300), and the floor absorbs clock skew
 * between the instance that computed the TTL and the database clock that enforces it.
 * Expiry uses the database clock (`now()`), the one clock every instance shares.
 */
import { randomInt } from 'node:crypto';
import { assertSchemaName, migrate, type Migration, type Pool } from '../../shared/infra/pg.js';
import { prepared, withValues, type PreparedQuery } from '../../shared/infra/prepared.js';
import { MicroBatcher } from './micro-batcher.js';

interface Pending {
  keyid: string;
  nonce: string;
  ttl: number;
}

export const DEFAULT_PER_KEYID_CAP = 100_000;
export const DEFAULT_AGGREGATE_CAP = 10_000_000;
export const DEFAULT_MIN_TTL_SECONDS = 360;
/** Longest TTL accepted: far above the 420 s the window rules allow. */
export const MAX_TTL_SECONDS = 3600;
const SHARDS = 16;
/** Counter row the harness uses to pre-fill a cap; never touched by purge. */
const HARNESS_SHARD = -1;

export const replayMigrations: Migration[] = [
  {
    id: 'replay_001_nonces',
    sql: (s) => `
      CREATE TABLE ${s}.replay_nonces (
        keyid text NOT NULL,
        nonce text NOT NULL,
        expires_at timestamptz NOT NULL,
        shard smallint NOT NULL,
        PRIMARY KEY (keyid, nonce)
      );
      CREATE INDEX replay_nonces_expires_at ON ${s}.replay_nonces (expires_at);
      CREATE TABLE ${s}.replay_counts (
        keyid text NOT NULL,
        shard smallint NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (keyid, shard)
      ) WITH (fillfactor = 50);`,
  },
];

export interface PgReplayStoreOptions {
  /** Schema holding the tables (default `receiver`). */
  schema?: string;
  /** Entries per keyid before `rate_abuse` (default 100,000). */
  perKeyidCap?: number;
  /** Entries over all keyids before `rate_abuse` (default 10,000,000). */
  aggregateCap?: number;
  /** Floor applied to requested TTLs (default 360 s). */
  minTtlSeconds?: number;
  /**
   * How long `atCap` may reuse a count that was under 90 % of the caps (ms, default 1000;
   * 0 disables). Safe because `insert` re-checks the cap atomically anyway.
   */
  atCapCacheMs?: number;
  /** Test seam: the time (ms since epoch) used instead of the database's `now()`. */
  clock?: () => number;
  /**
   * Commit nonce inserts with `synchronous_commit = off` (default false). Faster (no WAL
   * flush wait), but a PostgreSQL crash (not a receiver crash) may forget the nonces of
   * the last ~0.6 s; the idempotency store still deduplicates those events.
   */
  asyncCommit?: boolean;
}

export type InsertOutcome = 'inserted' | 'replayed' | 'cap';

export class PgReplayStore {
  readonly schema: string;
  readonly perKeyidCap: number;
  readonly aggregateCap: number;
  readonly minTtlSeconds: number;
  private readonly atCapCacheMs: number;
  private readonly clock: (() => number) | undefined;
  private readonly asyncCommit: boolean;
  private readonly countCache = new Map<string, number>();
  private readonly lastCapPurge = new Map<string, number>();
  private purgeTimer: NodeJS.Timeout | null = null;
  private purging: Promise<number> | null = null;
  private readonly sql: { insert: PreparedQuery; counts: PreparedQuery; seen: PreparedQuery };
  private readonly insertBatcher: MicroBatcher<Pending, InsertOutcome>;
  private readonly seenBatcher: MicroBatcher<{ keyid: string; nonce: string }, boolean>;

  constructor(
    private readonly pool: Pool,
    opts: PgReplayStoreOptions = {},
  ) {
    this.schema = assertSchemaName(opts.schema ?? 'receiver');
    this.perKeyidCap = opts.perKeyidCap ?? DEFAULT_PER_KEYID_CAP;
    this.aggregateCap = opts.aggregateCap ?? DEFAULT_AGGREGATE_CAP;
    this.minTtlSeconds = opts.minTtlSeconds ?? DEFAULT_MIN_TTL_SECONDS;
    this.atCapCacheMs = opts.atCapCacheMs ?? 1000;
    this.clock = opts.clock;
    this.asyncCommit = opts.asyncCommit ?? false;
    const s = this.schema;
    const now = 'coalesce($4::timestamptz, now())';
    // Async commit is set inside the statement (its implicit transaction commits right after),
    // so a batch costs one round trip rather than BEGIN, SET, the insert and COMMIT.
    const commitMode = this.asyncCommit
      ? `CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS cfg(v)`
      : '';
    this.sql = {
      // $1 keyids, $2 nonces, $3 ttls (s), $4 now|null, $5 shard, $6 per-keyid cap, $7 aggregate cap
      insert: prepared(
        'replay_insert',
        `
        WITH input AS (
          SELECT keyid, nonce, ttl, ord
          FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS t(keyid, nonce, ttl, ord)
        ), first AS (
          -- One index probe per nonce: a LATERAL ... LIMIT 1 cannot become a hashed subplan
          -- that reads the whole table, which a cached generic plan made while the table was
          -- small would otherwise keep doing as it grows.
          SELECT DISTINCT ON (input.keyid, input.nonce) input.keyid, input.nonce, input.ttl,
                 input.ord, l.live IS NOT NULL AS live
          FROM input
          LEFT JOIN LATERAL (
            SELECT true AS live FROM ${s}.replay_nonces r
            WHERE r.keyid = input.keyid AND r.nonce = input.nonce AND r.expires_at > ${now}
            LIMIT 1
          ) l ON true
          ORDER BY input.keyid, input.nonce, input.ord
        ), cur AS (
          SELECT keyid, sum(n) AS n FROM ${s}.replay_counts WHERE keyid = ANY ($1::text[]) GROUP BY keyid
        ), total AS (
          SELECT coalesce(sum(n), 0) AS n FROM ${s}.replay_counts
        ), admitted AS (
          SELECT keyid, nonce, ttl, ord FROM (
            SELECT f.keyid, f.nonce, f.ttl, f.ord,
                   coalesce(cur.n, 0) + row_number() OVER (PARTITION BY f.keyid ORDER BY f.ord) AS key_after,
                   (SELECT n FROM total) + row_number() OVER (ORDER BY f.ord) AS all_after
            FROM first f LEFT JOIN cur ON cur.keyid = f.keyid
            WHERE NOT f.live -- replays take no room, so they do not count toward the cap
          ) ranked
          WHERE key_after <= $6 AND all_after <= $7
        ), ins AS (
          INSERT INTO ${s}.replay_nonces AS r (keyid, nonce, expires_at, shard)
          SELECT keyid, nonce, ${now} + make_interval(secs => ttl), $5 FROM admitted
          ORDER BY keyid, nonce
          ON CONFLICT (keyid, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
            WHERE r.expires_at <= ${now}
          RETURNING r.keyid, r.nonce, (r.xmax = 0) AS fresh
        ), bump AS (
          INSERT INTO ${s}.replay_counts AS c (keyid, shard, n)
          SELECT keyid, $5, count(*) FROM ins WHERE fresh GROUP BY keyid ORDER BY keyid
          ON CONFLICT (keyid, shard) DO UPDATE SET n = c.n + EXCLUDED.n
          RETURNING 1
        )
        SELECT (ins.nonce IS NOT NULL AND f.ord = i.ord) AS inserted,
               (a.ord IS NOT NULL OR f.live) AS admitted,
               (SELECT count(*) FROM bump) AS bumped
        FROM input i
        JOIN first f ON f.keyid = i.keyid AND f.nonce = i.nonce
        LEFT JOIN ins ON ins.keyid = i.keyid AND ins.nonce = i.nonce
        LEFT JOIN admitted a ON a.keyid = i.keyid AND a.nonce = i.nonce
        ${commitMode}
        ORDER BY i.ord`,
      ),
      counts: prepared(
        'replay_counts',
        `SELECT (SELECT coalesce(sum(n), 0) FROM ${s}.replay_counts WHERE keyid = $1)::bigint AS key_n,
                (SELECT coalesce(sum(n), 0) FROM ${s}.replay_counts)::bigint AS all_n`,
      ),
      // $1 keyids, $2 nonces, $3 now|null: the ordinals of the live ones
      seen: prepared(
        'replay_seen',
        `
        SELECT t.ord::int AS ord
        FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(keyid, nonce, ord)
        CROSS JOIN LATERAL (
          SELECT 1 FROM ${s}.replay_nonces r
          WHERE r.keyid = t.keyid AND r.nonce = t.nonce
            AND r.expires_at > coalesce($3::timestamptz, now())
          LIMIT 1
        ) r`,
      ),
    };
    this.insertBatcher = new MicroBatcher((items) => this.insertBatch(items));
    this.seenBatcher = new MicroBatcher((items) => this.seenBatch(items));
  }

  /** Creates the tables (idempotent; serialised by `migrate`'s advisory lock). */
  async migrate(): Promise<void> {
    await migrate(this.pool, this.schema, replayMigrations);
  }

  private nowParam(): Date | null {
    return this.clock ? new Date(this.clock()) : null;
  }

  private async counts(keyid: string): Promise<{ keyN: number; allN: number }> {
    const { rows } = await this.pool.query<{ key_n: string; all_n: string }>(
      withValues(this.sql.counts, [keyid]),
    );
    return { keyN: Number(rows[0]!.key_n), allN: Number(rows[0]!.all_n) };
  }

  /** Step 9a, read-only as far as the cache's contents go. */
  async atCap(keyid: string): Promise<boolean> {
    const cachedAt = this.countCache.get(keyid);
    const t = this.clock ? this.clock() : Date.now();
    if (cachedAt !== undefined && t - cachedAt < this.atCapCacheMs) return false;
    let { keyN, allN } = await this.counts(keyid);
    if (keyN >= this.perKeyidCap || allN >= this.aggregateCap) {
      // Expired rows still count until purged; purge before calling it abuse (rate-limited).
      const last = this.lastCapPurge.get(keyid) ?? Number.NEGATIVE_INFINITY;
      if (t - last >= 10_000) {
        this.lastCapPurge.set(keyid, t);
        await this.purgeExpired();
        ({ keyN, allN } = await this.counts(keyid));
      }
    }
    const at = keyN >= this.perKeyidCap || allN >= this.aggregateCap;
    if (!at && keyN < 0.9 * this.perKeyidCap && allN < 0.9 * this.aggregateCap) {
      this.countCache.set(keyid, t);
    } else {
      this.countCache.delete(keyid);
    }
    return at;
  }

  /**
   * Whether a delivery store on this pool and schema may insert this cache's nonces itself,
   * in its own statement (not with the clock test seam: the store uses the database clock).
   */
  colocatedWith(pool: Pool, schema: string): boolean {
    return this.pool === pool && this.schema === schema && this.clock === undefined;
  }

  /**
   * What a colocated store needs to insert a nonce as `insert` would: the stored TTL, the
   * caps, whether the cap must be read (not when a count under 90 % of the caps was read
   * within `atCapCacheMs`), and whether the commit may skip the WAL flush.
   */
  burnParams(
    keyid: string,
    ttlSeconds: number,
  ): { ttl: number; capCheck: boolean; keyCap: number; allCap: number; async: boolean } {
    const cachedAt = this.countCache.get(keyid);
    return {
      ttl: this.storedTtl(ttlSeconds),
      capCheck: cachedAt === undefined || Date.now() - cachedAt >= this.atCapCacheMs,
      keyCap: this.perKeyidCap,
      allCap: this.aggregateCap,
      async: this.asyncCommit,
    };
  }

  /** A colocated insert met the cap: the next check reads the counters again. */
  sawCap(keyid: string): void {
    this.countCache.delete(keyid);
  }

  private storedTtl(ttlSeconds: number): number {
    return Math.min(
      Math.max(Math.ceil(Number.isFinite(ttlSeconds) ? ttlSeconds : 0), this.minTtlSeconds),
      MAX_TTL_SECONDS,
    );
  }

  /** Step 12: a live entry for (keyid, nonce)? Expired entries do not count. */
  seen(keyid: string, nonce: string): Promise<boolean> {
    return this.seenBatcher.push({ keyid, nonce });
  }

  /** Step 13: atomic with the cap check; a live duplicate is 'replayed' even at the cap. */
  insert(keyid: string, nonce: string, ttlSeconds: number): Promise<InsertOutcome> {
    return this.insertBatcher.push({ keyid, nonce, ttl: this.storedTtl(ttlSeconds) });
  }

  private async seenBatch(items: Array<{ keyid: string; nonce: string }>): Promise<boolean[]> {
    const { rows } = await this.pool.query<{ ord: number }>(
      withValues(this.sql.seen, [
        items.map((i) => i.keyid),
        items.map((i) => i.nonce),
        this.nowParam(),
      ]),
    );
    const live = new Set(rows.map((r) => r.ord));
    return items.map((_, i) => live.has(i + 1));
  }

  private runInsert(
    params: unknown[],
  ): Promise<{ rows: Array<{ inserted: boolean; admitted: boolean }> }> {
    return this.pool.query(withValues(this.sql.insert, params));
  }

  private async insertBatch(items: Pending[]): Promise<InsertOutcome[]> {
    const now = this.nowParam();
    const params = [
      items.map((i) => i.keyid),
      items.map((i) => i.nonce),
      items.map((i) => i.ttl),
      now,
      randomInt(SHARDS),
      this.perKeyidCap,
      this.aggregateCap,
    ];
    let rows: Array<{ inserted: boolean; admitted: boolean }>;
    for (let attempt = 1; ; attempt++) {
      try {
        ({ rows } = await this.runInsert(params));
        break;
      } catch (err) {
        // Two batches (or a batch and a purge) can lock the same rows in different orders;
        // PostgreSQL aborts one of them, which is then simply run again.
        if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
      }
    }
    const out: InsertOutcome[] = rows.map((r) =>
      r.inserted ? 'inserted' : r.admitted ? 'replayed' : 'cap',
    );
    const capped = items.filter((_, i) => out[i] === 'cap');
    if (capped.length > 0) {
      // Over the cap: a nonce already present still reads as a replay (the SDK's precedence).
      for (const c of capped) this.countCache.delete(c.keyid);
      const live = await this.seenBatch(capped);
      let j = 0;
      out.forEach((o, i) => {
        if (o === 'cap' && live[j++]) out[i] = 'replayed';
      });
    }
    return out;
  }

  /**
   * Deletes expired entries in batches and lowers the counters in the same transactions.
   * One purger at a time across instances (a transaction-scoped advisory lock); a caller
   * that finds another purging returns 0 at once.
   */
  purgeExpired(batchSize = 10_000): Promise<number> {
    this.purging ??= this.purgeLoop(batchSize).finally(() => {
      this.purging = null;
    });
    return this.purging;
  }

  private async purgeLoop(batchSize: number): Promise<number> {
    const s = this.schema;
    let total = 0;
    for (;;) {
      const client = await this.pool.connect();
      let deleted = 0;
      try {
        await client.query('BEGIN');
        const lock = await client.query<{ ok: boolean }>(
          'SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok',
          [`svc-replay-purge:${s}`],
        );
        if (!lock.rows[0]!.ok) {
          await client.query('ROLLBACK');
          return total;
        }
        const { rows } = await client.query<{ deleted: number }>(
          `WITH gone AS (
             DELETE FROM ${s}.replay_nonces WHERE ctid = ANY (ARRAY(
               SELECT ctid FROM ${s}.replay_nonces
               WHERE expires_at <= coalesce($1::timestamptz, now())
               LIMIT $2 FOR UPDATE SKIP LOCKED))
             RETURNING keyid, shard
           ), agg AS (
             SELECT keyid, shard, count(*) AS c FROM gone GROUP BY keyid, shard
           ), upd AS (
             UPDATE ${s}.replay_counts c SET n = greatest(c.n - agg.c, 0)
             FROM agg WHERE c.keyid = agg.keyid AND c.shard = agg.shard
             RETURNING 1
           )
           SELECT coalesce(sum(c), 0)::int AS deleted FROM agg`,
          [this.nowParam(), batchSize],
        );
        await client.query('COMMIT');
        deleted = rows[0]!.deleted;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
      total += deleted;
      if (deleted < batchSize) return total;
    }
  }

  /** Purges every `intervalMs` on an unref'd timer until `stop()`; errors go to `onError`. */
  startPurging(intervalMs = 60_000, onError: (err: unknown) => void = () => {}): void {
    if (this.purgeTimer) return;
    this.purgeTimer = setInterval(() => {
      this.purgeExpired().catch(onError);
    }, intervalMs);
    this.purgeTimer.unref();
  }

  /** Stops periodic purging and waits for a purge in progress. */
  async stop(): Promise<void> {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = null;
    await this.purging?.catch(() => {});
  }

  /** Live entries for a keyid, counted exactly (slow on big sets: tests and tooling). */
  async liveCount(keyid: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.schema}.replay_nonces
       WHERE keyid = $1 AND expires_at > coalesce($2::timestamptz, now())`,
      [keyid, this.nowParam()],
    );
    return rows[0]!.n;
  }

  /** Rebuilds the counters from the rows (repair after manual edits). */
  async recount(): Promise<void> {
    const s = this.schema;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`LOCK TABLE ${s}.replay_counts IN EXCLUSIVE MODE`);
      await client.query(`DELETE FROM ${s}.replay_counts WHERE shard <> $1`, [HARNESS_SHARD]);
      await client.query(
        `INSERT INTO ${s}.replay_counts (keyid, shard, n)
         SELECT keyid, shard, count(*) FROM ${s}.replay_nonces GROUP BY keyid, shard`,
      );
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
    this.countCache.clear();
  }

  // ---- conformance harness hooks (vectors 016 and 018) -------------------------------

  /** Pre-fills a keyid's cap (vector 018) with one counter row, not 100,000 inserts. */
  async harnessFillCap(keyid: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.schema}.replay_counts (keyid, shard, n) VALUES ($1, $2, $3)
       ON CONFLICT (keyid, shard) DO UPDATE SET n = EXCLUDED.n`,
      [keyid, HARNESS_SHARD, this.perKeyidCap],
    );
    this.countCache.delete(keyid);
  }

  /** Removes what `harnessFillCap` added. */
  async harnessClearCap(keyid: string): Promise<void> {
    await this.pool.query(
      `DELETE FROM ${this.schema}.replay_counts WHERE keyid = $1 AND shard = $2`,
      [keyid, HARNESS_SHARD],
    );
    this.countCache.delete(keyid);
  }

  /** Installs `replay_cache_entries` (vector 016) with the default TTL. */
  async harnessInstallEntries(
    entries: ReadonlyArray<{ keyid: string; nonce: string }>,
  ): Promise<void> {
    for (const e of entries) await this.insert(e.keyid, e.nonce, this.minTtlSeconds);
  }
}
