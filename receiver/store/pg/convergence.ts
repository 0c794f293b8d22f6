/**
 * Ordering and terminal convergence per (sender, task_id) (supplement §5.3).
 *
 * - A non-terminal status whose `timestamp` is not newer than the newest applied one is
 *   stale: it is acknowledged (200) and handed to the publisher flagged `stale`, never as
 *   the task's current state. The delivery that set the newest timestamp stays current when
 *   it is retried (after a failed publication), so a retry never demotes itself.
 * - The first authoritative terminal result wins across channels (webhook, poll, A2A). The
 *   comparison record is JCS({task_type, status, value}); an exact duplicate under another
 *   delivery key is acknowledged and not republished; a different terminal is a conflict
 *   (409 on the webhook path); a non-terminal after the terminal is stale.
 * - The same `notification_id` under a new `idempotency_key` is a re-emission: recorded and
 *   reported to the publisher as a flag, never collapsed into a retry.
 */
import { assertSchemaName, migrate, type Pool } from '../../../shared/infra/pg.js';
import {
  MIN_RETENTION_SECONDS,
  terminalOutcome,
  type ObservationSource,
  type OrderingDecision,
} from '../delivery-store.js';
import { orderableTimestamp, terminalRecord, TERMINAL_STATUSES } from '../observation.js';
import { ORDERING_MIGRATIONS } from './ordering-schema.js';

export type { ObservationSource, OrderingDecision };
export { TERMINAL_STATUSES, orderableTimestamp, terminalRecord };

export interface Observation {
  sender: string;
  taskId: string | null;
  /** The delivery key of the observation (webhook `idempotency_key`); null for polls. */
  key: string | null;
  /** ISO 8601 `timestamp` of the status, if any. */
  at: string | null;
  status: string | null;
  taskType: string | null;
  /** The extracted result (`result` of an MCP envelope, the data part of an A2A one). */
  value: unknown;
  source: ObservationSource;
  notificationId: string | null;
}

export interface ObservationResult {
  decision: OrderingDecision;
  /** The notification_id was seen before under another delivery key. */
  reEmission: boolean;
}

export interface TaskConvergenceOptions {
  pool: Pool;
  schema?: string;
  retryHorizonSeconds?: (sender: string) => number | undefined;
}

export class TaskConvergence {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly horizon: (sender: string) => number | undefined;

  constructor(options: TaskConvergenceOptions) {
    this.pool = options.pool;
    this.schema = assertSchemaName(options.schema ?? 'receiver');
    this.horizon = options.retryHorizonSeconds ?? (() => undefined);
  }

  async migrate(): Promise<void> {
    await migrate(this.pool, this.schema, ORDERING_MIGRATIONS);
  }

  retentionSeconds(sender: string): number {
    const h = this.horizon(sender);
    return Math.max(MIN_RETENTION_SECONDS, Number.isFinite(h) ? Math.ceil(h as number) : 0);
  }

  /** The SQL call and its parameters, shared with the pipeline's combined accept call. */
  callArgs(o: Observation): unknown[] {
    const terminal = o.status !== null && TERMINAL_STATUSES.has(o.status);
    const rec = terminal
      ? terminalRecord({ taskType: o.taskType, status: o.status as string, value: o.value })
      : null;
    return [
      o.sender,
      o.taskId,
      o.key,
      orderableTimestamp(o.at),
      o.status,
      terminal,
      rec?.fingerprint ?? null,
      rec?.record ?? null,
      o.source,
      o.notificationId,
      this.retentionSeconds(o.sender),
    ];
  }

  /** Records one observation and says how it relates to what was seen before. */
  async observe(o: Observation): Promise<ObservationResult> {
    const { rows } = await this.pool.query<{ decision: OrderingDecision; re_emission: boolean }>(
      `SELECT * FROM ${this.schema}.task_observe($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      this.callArgs(o),
    );
    const row = rows[0];
    return { decision: row?.decision ?? 'current', reEmission: row?.re_emission ?? false };
  }

  /**
   * For the buyer's poller (and A2A clients): reports a terminal result observed outside
   * the webhook path. `won` means this observation settled the task (run terminal side
   * effects), `duplicate` that the same result had already won, `conflict` that another
   * terminal result won first (a protocol conflict: do not merge or overwrite).
   */
  async observeTerminal(input: {
    sender: string;
    taskId: string;
    taskType: string | null;
    status: string;
    value: unknown;
    source: ObservationSource;
  }): Promise<'won' | 'duplicate' | 'conflict'> {
    if (!TERMINAL_STATUSES.has(input.status)) {
      throw new TypeError(`observeTerminal: "${input.status}" is not a terminal status`);
    }
    const { decision } = await this.observe({
      sender: input.sender,
      taskId: input.taskId,
      key: null,
      at: null,
      status: input.status,
      taskType: input.taskType,
      value: input.value,
      source: input.source,
      notificationId: null,
    });
    return terminalOutcome(decision);
  }

  /** The settled terminal of a task, if any. */
  async terminalOf(
    sender: string,
    taskId: string,
  ): Promise<{ status: string; record: string; source: ObservationSource } | null> {
    const { rows } = await this.pool.query<{
      terminal_status: string | null;
      terminal_record: string;
      terminal_source: ObservationSource;
    }>(
      `SELECT terminal_status, terminal_record, terminal_source FROM ${this.schema}.task_state
       WHERE sender = $1 AND task_id = $2`,
      [sender, taskId],
    );
    const r = rows[0];
    if (!r || r.terminal_status === null) return null;
    return { status: r.terminal_status, record: r.terminal_record, source: r.terminal_source };
  }

  /** Deletes task and notification state past retention. */
  async purgeExpired(): Promise<number> {
    const a = await this.pool.query(
      `DELETE FROM ${this.schema}.task_state WHERE expires_at < now()`,
    );
    const b = await this.pool.query(
      `DELETE FROM ${this.schema}.notification_ids WHERE expires_at < now()`,
    );
    return (a.rowCount ?? 0) + (b.rowCount ?? 0);
  }
}
