/**
 * The BullMQ side of delivery: jobs that point at outbox rows, split over S shard queues by
 * destination origin (`shards.ts`; issue #19 item 3), each queue under its own hash tag so a
 * Redis Cluster spreads them over its masters. A row job's id is derived from the outbox id,
 * so adding the same row twice (a reconciler pass after a Redis flush, a retry of a failed
 * dispatch) never makes a second job; one origin always lands in one shard, so its jobs
 * keep their order and its limiter its single key.
 */
import { Queue, type ConnectionOptions, type Job, type JobsOptions, type JobType } from 'bullmq';
import { hashTaggedPrefix } from '../../shared/infra/redis.js';
import type { TraceCarrier } from '../../shared/telemetry/trace-context.js';
import { DEFAULT_DISPATCH_SHARDS, shardOf, shardPrefixes } from './shards.js';

export const DELIVERY_QUEUE_NAME = 'webhook-delivery';
export const DEFAULT_QUEUE_PREFIX = hashTaggedPrefix('svc');

/** A job for one outbox row (retries, reconciler): its id is fixed by the row's. */
export interface RowJobData {
  /** The outbox row id (a bigint as a decimal string). */
  id: string;
  /** `scheme://host[:port]` of the target, for the per-origin limiter before any I/O. */
  origin: string;
  /** The trace context of the row's emit (tracing on): its attempts join that trace. */
  trace?: TraceCarrier;
}

/**
 * A job for the first attempt of rows enqueued together, or of rows a recovery put back:
 * one BullMQ round trip for many deliveries. `origins` has one entry per id, or a single
 * entry when every id shares it (recovery batches: ids only, ~10 bytes a row in Redis). A
 * row that needs a later attempt leaves it as a row job.
 */
export interface BatchJobData {
  ids: string[];
  origins: string[];
  /** Per id, the trace context of its emit (null: none); absent when no row has one. */
  traces?: Array<TraceCarrier | null>;
}

export type DeliveryJobData = RowJobData | BatchJobData;

export function isBatchJob(data: DeliveryJobData): data is BatchJobData {
  return Array.isArray((data as BatchJobData).ids);
}

/** The trace context of the `i`-th row of a batch job, if it carries one. */
export function batchTrace(data: BatchJobData, i: number): TraceCarrier | undefined {
  return data.traces?.[i] ?? undefined;
}

/** The origin of the `i`-th row of a batch job. */
export function batchOrigin(data: BatchJobData, i: number): string {
  return data.origins.length === 1 ? data.origins[0]! : data.origins[i]!;
}

export interface DispatchItem {
  id: string;
  origin: string;
  /** Unix ms; the job waits in the delayed set until then. */
  notBefore?: number;
  /** The trace context the row's attempts continue (the emit's). */
  trace?: TraceCarrier;
}

/** Pending rows of one origin due together, as a recovery puts them back. */
export interface RecoveredGroup {
  origin: string;
  /** Due in this many ms (0: now). */
  dueInMs: number;
  ids: string[];
}

export interface DeliveryQueueOptions {
  connection: ConnectionOptions;
  /** The deployment's base key prefix; each shard gets its own hash tag under it. */
  prefix?: string;
  name?: string;
  /** Shard count S (SVC_DISPATCH_SHARDS); default 16. Every process of a deployment uses one S. */
  shards?: number;
}

/** BullMQ ids may not be integers nor contain ':'. */
export function jobIdFor(outboxId: string): string {
  return `ob-${outboxId}`;
}

/**
 * Finished jobs are removed at once: the outbox keeps the record, so Redis holds only
 * what is still to be done. Failures here are infrastructure errors (PostgreSQL down);
 * after a few tries the job goes and the reconciler brings the row back.
 */
export const DELIVERY_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
};

/** Rows of one recovery batch job (one origin, due together). */
export const RECOVERY_BATCH_ROWS = 250;

export interface QueueDepth {
  waiting: number;
  delayed: number;
  active: number;
}

function depthOf(c: Record<string, number>): QueueDepth {
  return {
    waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
    delayed: c.delayed ?? 0,
    active: c.active ?? 0,
  };
}

type BulkJob = Parameters<Queue<DeliveryJobData>['addBulk']>[0][number];

export class DeliveryQueue {
  /** One BullMQ queue per shard, index = shard. */
  readonly queues: Array<Queue<DeliveryJobData>>;
  readonly name: string;
  /** The deployment's base prefix (shard prefixes derive from it). */
  readonly prefix: string;
  readonly shards: number;
  private readonly origins = new Map<string, number>();

  constructor(options: DeliveryQueueOptions) {
    this.name = options.name ?? DELIVERY_QUEUE_NAME;
    this.prefix = options.prefix ?? DEFAULT_QUEUE_PREFIX;
    this.shards = options.shards ?? DEFAULT_DISPATCH_SHARDS;
    this.queues = shardPrefixes(this.prefix, this.shards).map(
      (prefix) =>
        new Queue<DeliveryJobData>(this.name, {
          connection: options.connection,
          prefix,
          defaultJobOptions: DELIVERY_JOB_OPTIONS,
        }),
    );
  }

  /** The key prefix of shard `i` (its own hash tag). */
  shardPrefix(i: number): string {
    return this.queues[i]!.opts.prefix!;
  }

  /** The shard of a destination origin (cached: a deployment has few origins). */
  shardOf(origin: string): number {
    let s = this.origins.get(origin);
    if (s === undefined) {
      s = shardOf(origin, this.shards);
      if (this.origins.size > 100_000) this.origins.clear();
      this.origins.set(origin, s);
    }
    return s;
  }

  /** Items grouped by shard, each group in input order. */
  private byShard<T extends { origin: string }>(items: T[]): Map<number, T[]> {
    const out = new Map<number, T[]>();
    for (const item of items) {
      const s = this.shardOf(item.origin);
      let group = out.get(s);
      if (!group) out.set(s, (group = []));
      group.push(item);
    }
    return out;
  }

  /** Adds each shard's jobs to its queue, the shards in parallel. */
  private async addPerShard(jobs: Map<number, BulkJob[]>): Promise<void> {
    await Promise.all([...jobs].map(([s, list]) => this.queues[s]!.addBulk(list)));
  }

  /** First attempts of fresh rows, grouped `batchSize` to a job within each shard. */
  async dispatchBatch(items: DispatchItem[], batchSize = 50): Promise<void> {
    if (items.length === 0) return;
    const jobs = new Map<number, BulkJob[]>();
    for (const [s, shardItems] of this.byShard(items)) {
      const list: BulkJob[] = [];
      for (let i = 0; i < shardItems.length; i += batchSize) {
        const group = shardItems.slice(i, i + batchSize);
        list.push({
          name: 'deliver-batch',
          data: {
            ids: group.map((g) => g.id),
            origins: group.map((g) => g.origin),
            ...(group.some((g) => g.trace) ? { traces: group.map((g) => g.trace ?? null) } : {}),
          },
          // Row ids are unique, so the first and last of a group name it uniquely.
          opts: { jobId: `obb-${group[0]!.id}-${group.at(-1)!.id}` },
        });
      }
      jobs.set(s, list);
    }
    await this.addPerShard(jobs);
  }

  /** One row job per item (retries, reconciler); an existing job of the row is kept. */
  async dispatch(items: DispatchItem[]): Promise<void> {
    if (items.length === 0) return;
    const now = Date.now();
    const jobs = new Map<number, BulkJob[]>();
    for (const [s, shardItems] of this.byShard(items)) {
      jobs.set(
        s,
        shardItems.map((item) => ({
          name: 'deliver',
          data: item.trace
            ? { id: item.id, origin: item.origin, trace: item.trace }
            : { id: item.id, origin: item.origin },
          opts: {
            jobId: jobIdFor(item.id),
            ...(item.notBefore && item.notBefore > now ? { delay: item.notBefore - now } : {}),
          },
        })),
      );
    }
    await this.addPerShard(jobs);
  }

  /**
   * What a recovery puts back (rows whose jobs Redis lost), only into `shards`: one light
   * batch job per origin and due second, up to RECOVERY_BATCH_ROWS ids each, so a million
   * pending rows cost thousands of jobs, not a million. A row that also still has a job
   * is claimed by one of them only (the outbox claim), so an overlap is never a second
   * delivery. Returns the rows added.
   */
  async dispatchRecovered(groups: RecoveredGroup[], shards: ReadonlySet<number>): Promise<number> {
    const merged = new Map<string, { shard: number; origin: string; due: number; ids: string[] }>();
    let added = 0;
    for (const g of groups) {
      const shard = this.shardOf(g.origin);
      if (!shards.has(shard)) continue;
      const due = Math.max(0, Math.ceil(g.dueInMs / 1000) * 1000);
      const k = `${due}\n${g.origin}`;
      const m = merged.get(k);
      if (m) m.ids.push(...g.ids);
      else merged.set(k, { shard, origin: g.origin, due, ids: [...g.ids] });
      added += g.ids.length;
    }
    const jobs = new Map<number, BulkJob[]>();
    for (const g of merged.values()) {
      let list = jobs.get(g.shard);
      if (!list) jobs.set(g.shard, (list = []));
      for (let i = 0; i < g.ids.length; i += RECOVERY_BATCH_ROWS) {
        const ids = g.ids.slice(i, i + RECOVERY_BATCH_ROWS);
        list.push({
          name: 'deliver-batch',
          data: { ids, origins: [g.origin] },
          opts: { jobId: `obr-${ids[0]}-${ids.at(-1)}`, ...(g.due > 0 ? { delay: g.due } : {}) },
        });
      }
    }
    await this.addPerShard(jobs);
    return added;
  }

  /** The job of a row (row job id), looked up in its origin's shard. */
  getJob(outboxId: string, origin: string): Promise<Job<DeliveryJobData> | undefined> {
    return this.queues[this.shardOf(origin)]!.getJob(jobIdFor(outboxId));
  }

  /** Job counts summed over the shards (BullMQ states). */
  async jobCounts(...states: JobType[]): Promise<Record<string, number>> {
    const all = await Promise.all(this.queues.map((q) => q.getJobCounts(...states)));
    const out: Record<string, number> = {};
    for (const c of all) for (const [k, v] of Object.entries(c)) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  /** Jobs waiting, delayed or running, summed over the shards. */
  async depth(): Promise<QueueDepth> {
    const c = await this.jobCounts('waiting', 'delayed', 'active', 'prioritized');
    return depthOf(c);
  }

  /** Jobs waiting, delayed or running in each shard (index = shard): the depth metric. */
  async depthByShard(): Promise<QueueDepth[]> {
    return Promise.all(
      this.queues.map(async (q) =>
        depthOf(await q.getJobCounts('waiting', 'delayed', 'active', 'prioritized')),
      ),
    );
  }

  /** Removes every shard queue's keys (tests, `svc send`'s private queue). */
  async obliterate(): Promise<void> {
    await Promise.all(this.queues.map((q) => q.obliterate({ force: true })));
  }

  /** SCAN patterns covering every key of this deployment's queues (tests, tools). */
  keyPatterns(): string[] {
    const inner = this.prefix.replace(/[{}]/g, '');
    return [`${this.prefix}:*`, `{${inner}:s*`];
  }

  /**
   * Closes every shard's queue once its connection has finished starting. Why wait: a
   * BullMQ connection on a shared client that is closed while its start-up commands are in
   * flight drops its listeners, and when the caller then disconnects the client those
   * commands fail and BullMQ emits an 'error' nobody hears, which ends the process
   * (`svc worker` exited 1 on a SIGTERM just after its start).
   */
  async close(): Promise<void> {
    await Promise.all(this.queues.map((q) => closeStarted(q)));
  }
}

/**
 * Closes a BullMQ queue or worker after its connection has started, failed to, or
 * `waitMs` has passed (a Redis that is down must not hold a shutdown): see
 * `DeliveryQueue.close`.
 */
export async function closeStarted(
  q: { waitUntilReady(): Promise<unknown>; close(): Promise<void> },
  waitMs = 2000,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    q.waitUntilReady().catch(() => {}),
    new Promise<void>((r) => (timer = setTimeout(r, waitMs))),
  ]);
  clearTimeout(timer);
  await q.close();
}
