/**
 * The PostgreSQL outbox: the record of every event and of its delivery state. An event
 * is serialised once, and its body bytes, key and timestamp are frozen in its row, so
 * every attempt (and every worker that picks the row up after a crash) sends the same
 * bytes under the same key. Redis only carries the dispatch.
 */
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { assertSchemaName, type Pool, type PoolClient } from '../../shared/infra/pg.js';
import type { DeliveryQueue, DispatchItem } from '../delivery/queue.js';
import { inSpan, traceCarrier } from '../../shared/telemetry/trace-context.js';
import { DEFAULT_SENDER_SCHEMA } from '../schema.js';
import {
  claimSql,
  closeInterruptedAttempts,
  pendingById,
  quickClaimSql,
  settleSql,
} from './attempts.js';
import { Batcher } from './batcher.js';
import { prepared } from '../../shared/infra/prepared.js';
import {
  DispatchRetry,
  reconcileOverdue,
  redispatchAllPending,
  withTimeout,
} from './redispatch.js';
import {
  DEFAULT_RETENTION_SECONDS,
  dayBounds,
  maintainPartitions,
  type MaintainResult,
} from './partitions.js';
import type { EventSink, OutboundEvent } from './types.js';
import { authOf, checkEvent, insertParams, insertSql } from './insert.js';
import { DayStatements, type ClaimRow, type Statement } from './statements.js';
import { preparedPools, STATE_STATEMENTS_IN_FLIGHT } from './state-pool.js';
import {
  DEFAULT_RETRY_HORIZON_SECONDS,
  OutboxError,
  type ClaimedEvent,
  type ClaimMiss,
  type OutboxState,
  type PendingGroup,
  type RecoveryRow,
  type SettleInput,
  type SettledAttempt,
} from './rows.js';

export { createStatePool } from './state-pool.js';
export * from './rows.js';

export interface OutboxOptions {
  pool: Pool;
  queue: DeliveryQueue;
  schema?: string;
  /** Advertised `delivery_retry_horizon_seconds`; default 24 h. */
  horizonSeconds?: number;
  /**
   * Pool for the worker's claim and settle statements; default `pool`. Give it one made by
   * `createStatePool` to skip the WAL flush per batch: a state write lost in a database
   * crash only repeats an attempt under the same key and bytes, which at-least-once
   * delivery allows. Event rows themselves are always written with a durable commit.
   */
  statePool?: Pool;
  logger?: Logger;
  /** How long enqueue waits for Redis before leaving the rows to the reconciler; 5 s. */
  dispatchTimeoutMs?: number;
  /**
   * How long deliveries and their attempt records are kept, in seconds (default 30 days;
   * at least `horizonSeconds`): `maintainStorage` drops whole days past it.
   */
  retentionSeconds?: number;
  /**
   * Claims commit durably even on `statePool` (default true): an attempt is known before
   * it goes on the wire, so a database crash cannot forget one that was sent (its record,
   * its number). False saves one WAL flush per claim batch; a crash may then lose an
   * attempt's record (the row is sent again under the same number).
   */
  durableClaims?: boolean;
}

const SETTLE_LINGER_MS = 10;

export class Outbox implements EventSink {
  readonly pool: Pool;
  private readonly statePool: Pool;
  readonly queue: DeliveryQueue;
  readonly schema: string;
  readonly horizonSeconds: number;
  readonly retentionSeconds: number;
  private readonly logger: Logger;
  private readonly dispatchTimeoutMs: number;
  private readonly inserts: Batcher<OutboundEvent[], string[] | Error>;
  private readonly claims: Batcher<{ id: string; leaseMs: number }, ClaimedEvent | null>;
  private readonly settles: Batcher<SettleInput, number | null>;
  private readonly dispatchRetry: DispatchRetry;
  /**
   * The worker's statements. Parsing and planning them was about a third of PostgreSQL's
   * CPU per delivery (issue 19), so on a pool made by `createStatePool` they are named
   * (prepared once per session) and run on one generic plan, which that pool's sessions
   * force, with sequential scans off; each takes its ids' day range as two more
   * parameters, on which PostgreSQL prunes the partitions as the plan starts. On any other
   * pool they stay unnamed, planned per call with the batch's ids: a named statement there
   * would switch to a generic plan after five calls, and one planned while the outbox was
   * still small kept scanning it as it grew (1-worker throughput halved in `bench sender`).
   */
  private readonly statements: Record<'quickClaim' | 'claim' | 'settle', Statement>;
  /** The enqueue's INSERT, without and with the column of buys (see `insertSql`). */
  /** The quick claim and the settle, on one day's partitions when a batch is one day's. */
  private readonly days: DayStatements;
  /** The enqueue's INSERT, without and with the column of buys (see `insertSql`). */
  private readonly insertStatements: [Statement, Statement];

  constructor(options: OutboxOptions) {
    this.pool = options.pool;
    this.statePool = options.statePool ?? options.pool;
    this.queue = options.queue;
    this.schema = assertSchemaName(options.schema ?? DEFAULT_SENDER_SCHEMA);
    const durable = options.durableClaims ?? true;
    const named = preparedPools.has(this.statePool);
    const stmt = (label: string, text: string): Statement =>
      named ? prepared(label, text) : { name: undefined, text };
    this.statements = {
      quickClaim: stmt('outbox_quick_claim', quickClaimSql(this.schema, durable)),
      claim: stmt('outbox_claim', claimSql(this.schema, durable)),
      settle: stmt('outbox_settle', settleSql(this.schema)),
    };
    this.days = new DayStatements(this.statements, (suffix) => ({
      quickClaim: stmt(`outbox_quick_claim_${suffix}`, quickClaimSql(this.schema, durable, suffix)),
      settle: stmt(`outbox_settle_${suffix}`, settleSql(this.schema, suffix)),
    }));
    // An INSERT from parameters has no rows to find: its generic plan is the custom one,
    // on any pool, so it is always prepared (parsed and planned once per session).
    this.insertStatements = [
      prepared('outbox_insert', insertSql(this.schema, false)),
      prepared('outbox_insert_buys', insertSql(this.schema, true)),
    ];
    this.horizonSeconds = options.horizonSeconds ?? DEFAULT_RETRY_HORIZON_SECONDS;
    this.retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
    if (!Number.isInteger(this.retentionSeconds) || this.retentionSeconds < this.horizonSeconds) {
      throw new OutboxError(
        `retention (${this.retentionSeconds} s) must be whole seconds, at least the retry horizon (${this.horizonSeconds} s)`,
      );
    }
    this.logger = options.logger ?? silentLogger;
    this.dispatchTimeoutMs = options.dispatchTimeoutMs ?? 5000;
    this.dispatchRetry = new DispatchRetry(this.queue, this.dispatchTimeoutMs, this.logger);
    this.inserts = new Batcher((groups) => this.insertGroups(groups), 200);
    this.claims = new Batcher((ids) => this.claimMany(ids), 500);
    // Nobody waits on a settle for latency (the receiver has its answer already): up to
    // 10 ms of lingering lets the settles of a steady flow share a statement.
    this.settles = new Batcher((items) => this.settleMany(items), 500, 2, SETTLE_LINGER_MS);
  }

  /**
   * Opens the connections claims and settles use and runs both statements once on each
   * (with no rows), so the first jobs find the sessions' catalog caches loaded.
   */
  async warmUp(): Promise<void> {
    await Promise.all(
      Array.from({ length: STATE_STATEMENTS_IN_FLIGHT }, async () => {
        const client = await this.statePool.connect();
        try {
          await this.claimMany([], client);
          await client.query({ ...this.statements.claim, values: [[], [], ...dayBounds([])] });
          await this.settleMany([], client);
        } finally {
          client.release();
        }
      }),
    );
  }

  /**
   * Writes every event in one INSERT. Without `client` the rows are committed here and
   * dispatched at once. With `client` they join the caller's transaction and are
   * dispatched right away too: a worker that finds its row not yet visible waits for the
   * commit, drops the job if the transaction rolled back, and the reconciler covers a
   * dispatch lost in between.
   */
  enqueue(events: OutboundEvent[], client?: PoolClient): Promise<string[]> {
    if (events.length === 0) return Promise.resolve([]);
    // Events that carry the emit's context (NotificationCore) keep it: the emit's span
    // covers this call, and one span per delivery in each process is what tracing costs
    // (sender/README.md "Traces and metrics"). A direct call gets a span of its own, a
    // child of the caller's active span, if any.
    if (events[0]?.trace) return this.enqueueNow(events, client);
    return inSpan(
      'webhook.outbox',
      { attributes: { 'webhook.events': events.length } },
      (_s, ctx) => {
        // Tracing on: each event takes this span's context into its dispatch job.
        const trace = traceCarrier(ctx);
        return this.enqueueNow(trace ? events.map((e) => ({ ...e, trace })) : events, client);
      },
    );
  }

  private async enqueueNow(events: OutboundEvent[], client?: PoolClient): Promise<string[]> {
    for (const e of events) checkEvent(e);
    if (!client) {
      const out = await this.inserts.submit(events);
      if (out instanceof Error) throw out;
      return out;
    }
    return this.insertAndDispatch(events, client);
  }

  /** Concurrent enqueue calls share one INSERT (one commit) and one addBulk. */
  private async insertGroups(groups: OutboundEvent[][]): Promise<Array<string[] | Error>> {
    let ids: string[];
    try {
      ids = await this.insertAndDispatch(groups.flat());
    } catch (err) {
      if (groups.length === 1) throw err;
      // One caller's bad row (a reused key) must not fail the others: go one by one.
      return Promise.all(
        groups.map((g) =>
          this.insertAndDispatch(g).catch((e: unknown) =>
            e instanceof Error ? e : new Error(String(e)),
          ),
        ),
      );
    }
    const out: string[][] = [];
    let at = 0;
    for (const g of groups) {
      out.push(ids.slice(at, at + g.length));
      at += g.length;
    }
    return out;
  }

  private async insertAndDispatch(events: OutboundEvent[], client?: PoolClient): Promise<string[]> {
    const { params, buys, origins } = insertParams(events, this.horizonSeconds);
    const traces = events.some((e) => e.trace) ? events.map((e) => e.trace) : undefined;
    let rows: Array<{ id: string }>;
    try {
      ({ rows } = await (client ?? this.pool).query<{ id: string }>({
        ...this.insertStatements[buys ? 1 : 0],
        values: params,
      }));
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        throw new OutboxError('idempotency key already used: every event needs a fresh key');
      }
      throw err;
    }
    // Ids (day, then sequence) follow the ORDER BY, so sorting restores input order.
    const ids = rows.map((r) => r.id).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    const items: DispatchItem[] = ids.map((id, i) => {
      const trace = traces?.[i];
      return trace ? { id, origin: origins[i]!, trace } : { id, origin: origins[i]! };
    });
    try {
      await withTimeout(this.queue.dispatchBatch(items), this.dispatchTimeoutMs);
    } catch (err) {
      // The rows are written: Redis being away only delays them. This process dispatches
      // them again as soon as Redis answers (the reconciler is the backstop).
      this.logger.warn({ err, rows: ids.length }, 'outbox dispatch failed; retrying');
      this.dispatchRetry.add(items);
    }
    return ids;
  }

  /**
   * Takes the row for one attempt: counts it, starts the horizon clock, and leases it for
   * `leaseMs` (next_attempt_at moves past the attempt's timeout), so a second job for the
   * same row (reconciler, stalled job) waits instead of sending it twice at once.
   */
  async claim(id: string, leaseMs = 60_000): Promise<ClaimedEvent | ClaimMiss> {
    const claimed = await this.claims.submit({ id, leaseMs });
    if (claimed) return claimed;
    const probe = await this.pool.query(
      `SELECT state, (extract(epoch from next_attempt_at) * 1000)::float8 AS next_ms,
              (first_attempt_at IS NOT NULL
               AND first_attempt_at + horizon_seconds * interval '1 second' <= now()) AS past
         FROM ${this.schema}.outbox_delivery WHERE id = $1`,
      [id],
    );
    const p = probe.rows[0];
    if (!p) return { kind: 'missing' };
    if (p.state !== 'pending') return { kind: 'finished', state: p.state };
    if (p.past) {
      // Its last attempt, if never settled, is recorded before the row ends.
      await closeInterruptedAttempts(this.pool, this.schema, { ids: [id] });
      await this.settle(id, { state: 'expired', status: null, error: 'retry_horizon_passed' });
      return { kind: 'expired' };
    }
    return { kind: 'not_due', notBefore: p.next_ms };
  }

  /** Claims of concurrent jobs in one UPDATE; a row not claimable comes back null. */
  private async claimMany(
    items: Array<{ id: string; leaseMs: number }>,
    client?: PoolClient,
  ): Promise<Array<ClaimedEvent | null>> {
    const db = client ?? this.statePool;
    const ids = items.map((i) => i.id);
    const leases = items.map((i) => Math.round(i.leaseMs));
    // The quick claim (attempts.ts) takes every row whose previous attempt is settled; the
    // rest (a dead worker's open attempt to record, or not claimable at all) go through the
    // full claim, which records that attempt as interrupted in its own durable commit.
    const { rows } = await this.days.run<ClaimRow>(db, ids, 'quickClaim', [
      ids,
      leases,
      ...dayBounds(ids),
    ]);
    const got = new Set<string>(rows.map((r) => r.id));
    const rest = items.filter((i) => !got.has(i.id));
    if (rest.length > 0) {
      const restIds = rest.map((i) => i.id);
      const more = await db.query({
        ...this.statements.claim,
        values: [restIds, rest.map((i) => Math.round(i.leaseMs)), ...dayBounds(restIds)],
      });
      rows.push(...more.rows);
    }
    const byId = new Map<string, ClaimedEvent>();
    for (const r of rows) {
      byId.set(r.id, {
        id: r.id,
        idempotencyKey: r.idempotency_key,
        body: r.body,
        url: r.target_url,
        auth: authOf(r.auth_mode, r.auth_secret),
        channel: r.channel,
        notificationType: r.notification_type,
        notificationId: r.notification_id,
        mediaBuyId: r.media_buy_id,
        mediaBuyIds: r.media_buy_ids,
        principalId: r.principal_id,
        subscriberId: r.subscriber_id,
        sequenceNumber: r.sequence_number,
        attempt: r.attempts,
        firstAttemptAt: r.first_ms,
        horizonSeconds: r.horizon_seconds,
        dbNow: r.now_ms,
      });
    }
    // Two jobs of one row in the same batch: the row goes to the first only.
    return ids.map((id) => {
      const c = byId.get(id) ?? null;
      byId.delete(id);
      return c;
    });
  }

  /**
   * Records an attempt's outcome. For `pending` the next attempt is `delayMs` from now
   * (database clock); resolves to that time in Unix ms.
   */
  settle(id: string, outcome: Omit<SettleInput, 'id'>): Promise<number | null> {
    return this.settles.submit({ id, ...outcome });
  }

  private async settleMany(
    items: SettleInput[],
    client?: PoolClient,
  ): Promise<Array<number | null>> {
    const rec = (f: (r: SettledAttempt) => unknown) =>
      items.map((i) => (i.record ? f(i.record) : null));
    // One statement (attempts.ts settleSql).
    const ids = items.map((i) => i.id);
    const { rows } = await this.days.run<{ id: string; next_ms: number }>(
      client ?? this.statePool,
      ids,
      'settle',
      [
        ids,
        items.map((i) => i.state),
        items.map((i) => i.status),
        items.map((i) => i.error),
        items.map((i) => Math.round(i.delayMs ?? 0)),
        rec((r) => r.attempt),
        rec((r) => r.status),
        rec((r) => r.httpStatusCode),
        rec((r) => r.responseTimeMs),
        rec((r) => r.errorMessage?.slice(0, 500) ?? null),
        rec((r) => r.url),
        rec((r) => r.firedAt),
        rec((r) => r.completedAt),
        rec((r) => r.responseSnippet ?? null),
        rec((r) => r.keyId ?? null),
        rec((r) => (r.exchange ? JSON.stringify(r.exchange) : null)),
        ...dayBounds(ids),
        items.some((i) => !i.record || i.record.attempt > 1),
      ],
    );
    const byId = new Map<string, number>(rows.map((r) => [r.id, r.next_ms]));
    return items.map((i) => byId.get(i.id) ?? null);
  }

  /**
   * Extends the claim leases of rows whose attempts are still running in this worker (a
   * heartbeat): a short lease then frees a dead worker's rows within seconds without ever
   * letting a slow attempt of a live one be sent twice. Never shortens a lease, and leaves
   * settled rows alone.
   */
  async renewLeases(ids: string[], leaseMs: number): Promise<number> {
    if (ids.length === 0) return 0;
    const { rowCount } = await this.statePool.query(
      // SKIP LOCKED: a row a settle or claim holds right now is left for the next beat
      // (it is being settled anyway), so the heartbeat never waits on nor deadlocks with them.
      // $3, $4: the ids' days, on which the state pool's generic plans prune.
      `UPDATE ${this.schema}.outbox_delivery o
          SET next_attempt_at = greatest(o.next_attempt_at, now() + $2::int * interval '1 millisecond')
         FROM (SELECT id FROM ${this.schema}.outbox_delivery
                WHERE id = ANY($1::bigint[]) AND ${pendingById('outbox_delivery')}
                  AND id >= $3::bigint AND id < $4::bigint
                ORDER BY id FOR UPDATE SKIP LOCKED) AS mine
        WHERE o.id = mine.id AND o.id = ANY($1::bigint[])
          AND o.id >= $3::bigint AND o.id < $4::bigint`,
      [ids, Math.round(leaseMs), ...dayBounds(ids)],
    );
    return rowCount ?? 0;
  }

  /**
   * Re-dispatches pending rows overdue by more than `graceMs` (default 60 s), split between
   * workers running it at once, paged past any number of rows (`redispatch.ts`).
   */
  reconcile(options: { graceMs?: number; pageSize?: number } = {}): Promise<number> {
    return reconcileOverdue(this.pool, this.queue, this.schema, options);
  }

  /**
   * Records the attempts of rows whose claim lease lapsed over `marginMs` (default 1 s) ago
   * without a settle: their worker died, possibly after sending (`attempts.ts`).
   */
  closeInterrupted(options: { marginMs?: number; limit?: number } = {}): Promise<number> {
    return closeInterruptedAttempts(this.pool, this.schema, options);
  }

  /** After Redis lost its data: one job for every pending row, due when it is (`redispatch.ts`). */
  redispatchAll(options: { pageSize?: number; onPage?: () => Promise<void> } = {}) {
    return redispatchAllPending(
      (after, limit) => this.pendingForRecovery(after, limit),
      this.queue,
      options,
    );
  }

  /**
   * One page of pending rows: the first `limit` by id in (`after`, `upTo`], grouped by
   * target URL and due second, ids in order (`delivery/dispatch-recovery.ts`: the only
   * read of the outbox a recovery makes; grouped here, a page of 10,000 rows comes back as
   * a few dozen rows). `dueInMs` is how long until the group is due (a claimed row: its
   * lease), 0 when due now; `last` is the page's highest id, null when it is empty.
   */
  async pendingPage(
    after: string,
    limit: number,
    upTo?: string,
  ): Promise<{ groups: PendingGroup[]; rows: number; last: string | null }> {
    const { rows } = await this.pool.query<{ url: string; due_s: number; ids: string }>(
      `SELECT target_url AS url, due_s, array_agg(id ORDER BY id)::text AS ids
         FROM (SELECT d.id, e.target_url,
                      ceil(greatest(0, extract(epoch from d.next_attempt_at - now())))::float8 AS due_s
                 FROM ${this.schema}.outbox_delivery d
                 JOIN ${this.schema}.outbox_event e ON e.id = d.id
                WHERE d.state = 'pending' AND d.id > $1::bigint
                  AND ($3::bigint IS NULL OR d.id <= $3::bigint)
                ORDER BY d.id LIMIT $2) page
        GROUP BY 1, 2`,
      [after, limit, upTo ?? null],
    );
    let count = 0;
    let last: bigint | null = null;
    const groups = rows.map((r) => {
      const ids = r.ids.slice(1, -1).split(',');
      count += ids.length;
      const top = BigInt(ids.at(-1)!);
      if (last === null || top > last) last = top;
      return { url: r.url, dueInMs: r.due_s * 1000, ids };
    });
    return { groups, rows: count, last: last === null ? null : String(last) };
  }

  /**
   * Seconds since the oldest still-pending delivery was enqueued (0 when none is pending):
   * the `webhook_oldest_pending_seconds` gauge. One index probe per day partition
   * (outbox_console_state: state, created_at).
   */
  async oldestPendingSeconds(): Promise<number> {
    const { rows } = await this.pool.query<{ age: number | null }>(
      `SELECT extract(epoch from now() - min(created_at))::float8 AS age
         FROM ${this.schema}.outbox_delivery WHERE state = 'pending'`,
    );
    return Math.max(0, rows[0]?.age ?? 0);
  }

  /** The lowest and highest row ids (bounds for reading pending rows in parallel ranges). */
  async idBounds(): Promise<{ min: string; max: string } | null> {
    const { rows } = await this.pool.query<{ min: string | null; max: string | null }>(
      `SELECT min(id)::text AS min, max(id)::text AS max FROM ${this.schema}.outbox_delivery`,
    );
    const r = rows[0];
    return r?.min && r.max ? { min: r.min, max: r.max } : null;
  }

  /**
   * One page of pending deliveries for the recovery after a Redis loss: ids above `after`
   * (a decimal id, '0' to start), in id order, at most `limit`, each with its target URL
   * and how long until it is due (ms, negative when overdue).
   */
  async pendingForRecovery(after: string, limit: number): Promise<RecoveryRow[]> {
    const { rows } = await this.pool.query<{ id: string; target_url: string; due_in: number }>(
      // (ordered by the bigint column: an output column named id would sort as text)
      `SELECT d.id::text AS id, e.target_url,
              (extract(epoch from d.next_attempt_at - now()) * 1000)::float8 AS due_in
         FROM ${this.schema}.outbox_delivery d
         JOIN ${this.schema}.outbox_event e ON e.id = d.id
        WHERE d.state = 'pending' AND d.id > $1::bigint
        ORDER BY d.id LIMIT $2`,
      [after, limit],
    );
    return rows.map((r) => ({ id: r.id, targetUrl: r.target_url, dueInMs: r.due_in }));
  }

  /**
   * Storage maintenance (`partitions.ts`): today's partitions and the days ahead created,
   * days past the retention dropped whole unless a delivery in them is still pending.
   * `now` is for tests on a virtual clock.
   */
  maintainStorage(now?: Date): Promise<MaintainResult> {
    return maintainPartitions(this.pool, this.schema, {
      now,
      retentionSeconds: this.retentionSeconds,
      logger: this.logger,
    });
  }

  /** A row's delivery state, for tools and tests. */
  async state(id: string): Promise<{
    state: OutboxState;
    attempts: number;
    lastStatus: number | null;
    lastError: string | null;
  } | null> {
    const { rows } = await this.pool.query(
      `SELECT state, attempts, last_status, last_error FROM ${this.schema}.outbox_delivery
        WHERE id = $1`,
      [id],
    );
    const r = rows[0];
    return r
      ? { state: r.state, attempts: r.attempts, lastStatus: r.last_status, lastError: r.last_error }
      : null;
  }
}
