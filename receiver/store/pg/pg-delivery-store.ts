/**
 * The PostgreSQL delivery store (see ../delivery-store.ts for the contract; supplement §5.2,
 * §5.3, §2.9 step 13). Concurrent calls of `accept` and `complete` made in one turn of the
 * event loop leave together as one `accept_batch` statement: one round trip and one commit
 * for the batch's done-marks, nonce inserts, claims and ordering observations. Rows are
 * taken in (task, key) order so two batches lock shared rows in the same order; a deadlock
 * that still happens (a done-mark and a claim crossing) is run again.
 *
 * The per-sender bound is read from `sender_key_counts` (O(1)), cached per sender and
 * re-read at most every `countRefreshMs` in the background, bumped locally between reads:
 * approximate across processes by design (it protects storage, it is not a quota).
 */
import { randomInt, randomUUID } from 'node:crypto';
import { assertSchemaName, migrate, type Pool } from '../../../shared/infra/pg.js';
import { prepared, withValues, type PreparedQuery } from '../../../shared/infra/prepared.js';
import type { ReplayStore } from '../../../shared/signing/verify.js';
import { MicroBatcher } from '../../replay/micro-batcher.js';
import { PgReplayStore } from '../../replay/pg-replay-store.js';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_KEYS_PER_SENDER,
  retentionSeconds,
  type AcceptInput,
  type AcceptOutcome,
  type Claim,
  type DeliveryStore,
  type OrderingDecision,
  type ProtocolVersion,
  type TerminalInput,
} from '../delivery-store.js';
import { orderableTimestamp, terminalRecord, TERMINAL_STATUSES } from '../observation.js';
import { TaskConvergence } from './convergence.js';
import { RECEIVER_MIGRATIONS } from './schema.js';
import { SenderBound } from './sender-bound.js';

export interface PgDeliveryStoreOptions {
  pool: Pool;
  /** PostgreSQL schema of the receiver's tables (default `receiver`). */
  schema?: string;
  protocolVersion: ProtocolVersion;
  /** Claim lease before another process may take an unfinished key over (default 30 s). */
  leaseMs?: number;
  /** Bound on stored keys per sender; new keys past it are `over_limit` (default 5M). */
  maxKeysPerSender?: number;
  /** How often a sender's key count is re-read (default 5 s). */
  countRefreshMs?: number;
  /** A sender's advertised `delivery_retry_horizon_seconds`, if any. */
  retryHorizonSeconds?: (sender: string) => number | undefined;
  /**
   * Wait for the WAL flush when committing (default false). Off, a database crash can cost
   * at most one extra publication of a key delivered again, never an event: the claim is
   * then gone too and the retry claims it afresh (the queue publisher's insert always
   * waits for the flush).
   */
  synchronousCommit?: boolean;
}

type Op =
  | { kind: 'done'; claim: Claim; outcome: string }
  | { kind: 'accept'; input: AcceptInput; owner: string; bounded: boolean };

interface Row {
  ord: number;
  result: string;
  generation: number;
  outcome: string | null;
  decision: OrderingDecision | null;
  re_emission: boolean | null;
  /** Set when this call's statement failed on its own (its neighbours went through). */
  error?: unknown;
}

const DEADLOCK = '40P01';

/** The row of a call whose statement failed on its own (a done-mark reads it as lost). */
const FAILED: Row = {
  ord: 0,
  result: 'failed',
  generation: 0,
  outcome: null,
  decision: null,
  re_emission: null,
};

export class PgDeliveryStore implements DeliveryStore {
  readonly schema: string;
  readonly protocolVersion: ProtocolVersion;
  readonly leaseMs: number;
  /** Ordering and convergence state, for polls and A2A clients (`observeTerminal`). */
  readonly convergence: TaskConvergence;
  private readonly pool: Pool;
  private readonly horizon: (sender: string) => number | undefined;
  private readonly synchronousCommit: boolean;
  private readonly bound: SenderBound;
  private readonly batcher: MicroBatcher<Op, Row | undefined>;
  private replay: PgReplayStore | null = null;
  private readonly sql: Record<'batch' | 'release' | 'renew' | 'count' | 'purge', PreparedQuery>;

  constructor(o: PgDeliveryStoreOptions) {
    this.pool = o.pool;
    this.schema = assertSchemaName(o.schema ?? 'receiver');
    this.protocolVersion = o.protocolVersion;
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.horizon = o.retryHorizonSeconds ?? (() => undefined);
    this.synchronousCommit = o.synchronousCommit ?? false;
    this.convergence = new TaskConvergence({
      pool: o.pool,
      schema: this.schema,
      retryHorizonSeconds: o.retryHorizonSeconds,
    });
    this.sql = statements(this.schema);
    this.bound = new SenderBound(
      o.maxKeysPerSender ?? DEFAULT_MAX_KEYS_PER_SENDER,
      o.countRefreshMs ?? 5_000,
      (sender) => this.senderKeyCount(sender),
    );
    // One statement in flight: under load the calls that wait leave together, so the batch
    // grows with the load instead of the number of commits (a call's set-up is most of a
    // small batch's database CPU: four in flight kept batches half the size of two, and two
    // cost 0.52-0.57x 8faf630's database CPU per event end to end where one costs 0.38-0.48x).
    // A call arriving while the database is idle still leaves at once.
    this.batcher = new MicroBatcher((ops) => this.runBatch(ops), 128, 1);
  }

  /** Creates or upgrades every table and function of the receiver's schema. */
  async migrate(): Promise<void> {
    await migrate(this.pool, this.schema, RECEIVER_MIGRATIONS);
  }

  /** True for a `PgReplayStore` on this pool and schema, which `accept` then inserts into. */
  burnsNonces(replay: ReplayStore): boolean {
    if (!(replay instanceof PgReplayStore) || !replay.colocatedWith(this.pool, this.schema)) {
      return false;
    }
    this.replay = replay;
    return true;
  }

  retentionSeconds(sender: string): number {
    return retentionSeconds(this.horizon(sender));
  }

  async accept(input: AcceptInput): Promise<AcceptOutcome> {
    if (input.nonce && !this.replay) throw new Error('accept: this store burns no nonces');
    const bounded = await this.bound.atBound(input.sender);
    const owner = randomUUID();
    const row = await this.batcher.push({ kind: 'accept', input, owner, bounded });
    if (row?.error !== undefined) throw row.error;
    switch (row?.result) {
      case 'claimed':
      case 'taken_over':
        if (row.result === 'claimed') this.bound.bump(input.sender);
        return {
          kind: 'claimed',
          claim: {
            sender: input.sender,
            key: input.key,
            owner,
            generation: row.generation,
            takeover: row.result === 'taken_over',
          },
          decision: row.decision ?? 'current',
          reEmission: row.re_emission ?? false,
        };
      case 'done':
        return { kind: 'done', outcome: row.outcome };
      case 'conflict':
      case 'over_limit':
      case 'replayed':
        return { kind: row.result };
      case 'rate_abuse':
        if (input.nonce) this.replay?.sawCap(input.nonce.keyid);
        return { kind: 'rate_abuse' };
      default:
        return { kind: 'in_flight' };
    }
  }

  async complete(claim: Claim, outcome: string): Promise<boolean> {
    const row = await this.batcher.push({ kind: 'done', claim, outcome });
    return row?.result === 'completed';
  }

  async release(claim: Claim): Promise<void> {
    await this.pool.query(withValues(this.sql.release, fence(claim)));
  }

  async renew(claim: Claim): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      withValues(this.sql.renew, [...fence(claim), this.leaseMs]),
    );
    return rowCount === 1;
  }

  observeTerminal(input: TerminalInput): Promise<'won' | 'duplicate' | 'conflict'> {
    return this.convergence.observeTerminal(input);
  }

  async senderKeyCount(sender: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(withValues(this.sql.count, [sender]));
    return Number(rows[0]?.n ?? 0);
  }

  /** Deletes keys and task state past retention; lowers the per-sender counts with it. */
  async purgeExpired(batch = 10_000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rows } = await this.pool.query<{ deleted: number }>(
        withValues(this.sql.purge, [batch]),
      );
      const n = rows[0]?.deleted ?? 0;
      total += n;
      if (n < batch) break;
    }
    if (total > 0) this.bound.forget();
    return total + (await this.convergence.purgeExpired());
  }

  /**
   * One statement for the batch. A deadlock (a done-mark and a claim of two batches
   * crossing) runs it again; any other failure runs each call on its own, so one bad row
   * never fails its neighbours.
   */
  private async runBatch(ops: Op[]): Promise<Array<Row | undefined>> {
    const params = this.batchParams(ops);
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await this.pool.query<Row>(withValues(this.sql.batch, params.values));
        const out = new Array<Row | undefined>(ops.length);
        for (const r of rows) out[params.index(r.ord)] = r;
        return out;
      } catch (err) {
        if ((err as { code?: string }).code === DEADLOCK && attempt < 5) continue;
        if (ops.length === 1) throw err;
        return this.runAlone(ops);
      }
    }
  }

  private async runAlone(ops: Op[]): Promise<Array<Row | undefined>> {
    const settled = await Promise.allSettled(ops.map((op) => this.runBatch([op])));
    const failed = settled.find((s) => s.status === 'rejected');
    // MicroBatcher fails the whole batch on a throw: only when every call failed alike.
    if (failed && settled.every((s) => s.status === 'rejected')) throw failed.reason;
    // A call that failed alone carries its error: an accept throws it (the pipeline logs it
    // and answers 503), rather than reading as "in flight" with nothing said.
    return settled.map((s) =>
      s.status === 'fulfilled' ? s.value[0] : { ...FAILED, error: s.reason as unknown },
    );
  }

  /** The statement's arrays, done-marks and accepts each in lock order. */
  private batchParams(ops: Op[]): { values: unknown[]; index: (ord: number) => number } {
    const dones = ops
      .map((op, i) => ({ op, i }))
      .filter((x): x is { op: Extract<Op, { kind: 'done' }>; i: number } => x.op.kind === 'done')
      .sort(
        (a, b) => cmp(a.op.claim.sender, b.op.claim.sender) || cmp(a.op.claim.key, b.op.claim.key),
      );
    const accepts = ops
      .map((op, i) => ({ op, i }))
      .filter(
        (x): x is { op: Extract<Op, { kind: 'accept' }>; i: number } => x.op.kind === 'accept',
      )
      .map((x) => ({ ...x, cols: this.acceptColumns(x.op) }))
      .sort(
        (a, b) => cmp(a.cols.task ?? '', b.cols.task ?? '') || cmp(a.op.input.key, b.op.input.key),
      );
    const d = dones.map((x) => x.op);
    const a = accepts.map((x) => x.cols.values);
    const column = (c: number) => a.map((v) => v[c]);
    const replay = this.replay;
    const values = [
      d.map((o) => o.claim.sender),
      d.map((o) => o.claim.key),
      d.map((o) => o.claim.owner),
      d.map((o) => o.claim.generation),
      d.map((o) => o.outcome),
      ...Array.from({ length: 18 }, (_, c) => column(c)),
      this.leaseMs,
      this.protocolVersion === '3.2',
      replay?.perKeyidCap ?? 0,
      replay?.aggregateCap ?? 0,
      randomInt(16),
      !this.synchronousCommit && (replay === null || accepts.every((x) => x.cols.async)),
    ];
    return {
      values,
      index: (ord) => (ord < 0 ? dones[-ord - 1]!.i : accepts[ord - 1]!.i),
    };
  }

  /** One accept's 18 columns, in `accept_batch`'s order. */
  private acceptColumns(op: Extract<Op, { kind: 'accept' }>): {
    values: unknown[];
    task: string | null;
    async: boolean;
  } {
    const { input } = op;
    const o = input.observation;
    const burn = input.nonce && this.replay?.burnParams(input.nonce.keyid, input.nonce.ttlSeconds);
    const terminal = o.status !== null && TERMINAL_STATUSES.has(o.status);
    const rec = terminal
      ? terminalRecord({ taskType: o.taskType, status: o.status as string, value: o.value })
      : null;
    return {
      task: o.taskId,
      async: burn ? burn.async : true,
      values: [
        input.nonce?.keyid ?? null,
        input.nonce?.nonce ?? null,
        burn?.ttl ?? null,
        burn?.capCheck ?? false,
        input.sender,
        input.key,
        input.fingerprint,
        op.owner,
        this.retentionSeconds(input.sender),
        op.bounded,
        o.taskId,
        orderableTimestamp(o.at),
        o.status,
        terminal,
        rec?.fingerprint ?? null,
        rec?.record ?? null,
        o.source,
        o.notificationId,
      ],
    };
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function fence(c: Claim): unknown[] {
  return [c.sender, c.key, c.owner, c.generation];
}

function statements(
  s: string,
): Record<'batch' | 'release' | 'renew' | 'count' | 'purge', PreparedQuery> {
  const params = Array.from({ length: 29 }, (_, i) => `$${i + 1}`).join(', ');
  return {
    batch: prepared('rcv_accept_batch', `SELECT * FROM ${s}.accept_batch(${params})`),
    release: prepared(
      'rcv_release',
      `UPDATE ${s}.idempotency_keys SET lease_until = clock_timestamp() - interval '1 millisecond'
       WHERE sender = $1 AND idempotency_key = $2 AND owner = $3 AND generation = $4
         AND state = 'processing'`,
    ),
    renew: prepared(
      'rcv_renew',
      `UPDATE ${s}.idempotency_keys
         SET lease_until = clock_timestamp() + $5 * interval '1 millisecond'
       WHERE sender = $1 AND idempotency_key = $2 AND owner = $3 AND generation = $4
         AND state = 'processing'`,
    ),
    count: prepared(
      'rcv_sender_count',
      `SELECT coalesce(sum(n), 0)::bigint AS n FROM ${s}.sender_key_counts WHERE sender = $1`,
    ),
    purge: prepared(
      'rcv_purge_keys',
      `WITH gone AS (
         DELETE FROM ${s}.idempotency_keys WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM ${s}.idempotency_keys WHERE expires_at < now() LIMIT $1))
         RETURNING sender
       ), agg AS (
         SELECT sender, count(*) AS c FROM gone GROUP BY sender
       ), lowered AS (
         INSERT INTO ${s}.sender_key_counts AS k (sender, shard, n)
         SELECT sender, 0, -c FROM agg ORDER BY sender
         ON CONFLICT (sender, shard) DO UPDATE SET n = k.n + EXCLUDED.n
         RETURNING 1
       )
       SELECT coalesce(sum(c), 0)::int AS deleted FROM agg`,
    ),
  };
}
