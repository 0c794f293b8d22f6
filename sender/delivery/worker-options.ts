/**
 * What a DeliveryWorker is given (outbox, signer, Redis, concurrency, limits, hooks) and
 * what it reports after each attempt (the worker itself: worker.ts).
 */
import type { ConnectionOptions } from 'bullmq';
import type { Logger } from '../../shared/infra/logger.js';
import type { ActivityLog } from '../activity/activity-log.js';
import type { SenderMetrics } from '../metrics.js';
import type { Outbox } from '../outbox/outbox.js';
import type { Signer } from './authenticate.js';
import type { BackoffOptions } from './backoff.js';
import type { AttemptResult, Verdict } from './classify.js';
import type { TransportOptions } from './transport.js';

/** What the worker reports after each attempt (the `svc send` printout, tests). */
export interface AttemptReport {
  outboxId: string;
  idempotencyKey: string;
  attempt: number;
  result: AttemptResult;
  verdict: Verdict;
  /** The state the row is left in. */
  state: 'pending' | 'delivered' | 'stopped' | 'expired';
  responseTimeMs: number;
  /** Unix ms of the next attempt when state is pending. */
  nextAttemptAt: number | null;
}

export interface DeliveryWorkerOptions extends TransportOptions {
  outbox: Outbox;
  signer: Signer;
  connection: ConnectionOptions;
  /**
   * Ignored: the queues (base prefix, name, shard count) are the outbox's
   * (`outbox.queue`), so a worker can never consume other queues than its outbox fills.
   */
  prefix?: string;
  queueName?: string;
  /**
   * The dispatch shards this process consumes: indexes, or `all` / a list like `0-7,12`
   * (default all). Every shard needs at least one worker somewhere.
   */
  shards?: readonly number[] | string;
  /** BullMQ jobs in flight per process over all its shards (a batch job holds up to 50 rows); default 64. */
  concurrency?: number;
  /** Attempts of batch jobs in flight per process; default 256. */
  maxInFlight?: number;
  /** Attempts in flight per origin across all worker processes; default 16 (per process at most concurrency / 2). */
  perOriginConcurrency?: number;
  backoff?: BackoffOptions;
  activity?: ActivityLog;
  metrics?: SenderMetrics;
  logger?: Logger;
  /**
   * BullMQ lock and stall check (default 4 s and 2 s): a killed worker's jobs run again
   * elsewhere within ~6 s. Tests shorten them.
   */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /**
   * Claim lease of a row (default 4.5 s), renewed every third of it while the attempt runs:
   * a killed worker's rows are free again within this long.
   */
  rowLeaseMs?: number;
  /** How long a settle that fails (database restarting) is retried; default 30 s. */
  settleRetryMs?: number;
  /** Origin slot lease without renewal (default 3 s): how long a dead worker's slots stay taken. */
  slotLeaseMs?: number;
  /** How long a job waits for its row to become visible (caller's open transaction). */
  visibilityWaitMs?: number;
  /**
   * Reconciler period and grace (default 5 s and 30 s: a backstop for jobs BullMQ dropped;
   * Redis losses and failed dispatches have their own faster paths, and a shorter grace
   * would double the jobs of a backlog that is merely slow); 0 disables the in-process
   * reconciler and the Redis-loss check (every `recoveryCheckMs`, default 1 s).
   */
  reconcileEveryMs?: number;
  reconcileGraceMs?: number;
  recoveryCheckMs?: number;
  /**
   * Storage maintenance period (`Outbox.maintainStorage`: partitions created ahead, days
   * past the retention dropped whole); 0 disables. Default 1 h.
   */
  storageEveryMs?: number;
  onAttempt?: (report: AttemptReport) => void;
  /**
   * The worker met a condition it cannot run under (a single-node client answered by a
   * Redis Cluster): it has stopped taking jobs and calls this once (unset: it logs the
   * error as fatal); the process should exit.
   */
  onFatal?: (err: Error) => void;
  /** Start consuming at once (default true); otherwise call `start()`. */
  autorun?: boolean;
  /**
   * How long a job of a paused destination (console Pause) waits before it asks again
   * (default 10 s), and how often the paused set is re-read (default 1 s).
   */
  pausedRecheckMs?: number;
  pausedRefreshMs?: number;
}
