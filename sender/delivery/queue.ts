/**
 * The BullMQ side of delivery: one queue whose jobs point at outbox rows. The job id is
 * derived from the outbox id, so adding the same row twice (a reconciler pass after a
 * Redis flush, a retry of a failed dispatch) never makes a second job.
 */
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { hashTaggedPrefix } from '../../shared/infra/redis.js';

export const DELIVERY_QUEUE_NAME = 'webhook-delivery';
export const DEFAULT_QUEUE_PREFIX = hashTaggedPrefix('svc');

/** A job for one outbox row (retries, reconciler): its id is fixed by the row's. */
export interface RowJobData {
  /** The outbox row id (a bigint as a decimal string). */
  id: string;
  /** `scheme://host[:port]` of the target, for the per-origin limiter before any I/O. */
  origin: string;
}

/**
 * A job for the first attempt of rows enqueued together: one BullMQ round trip for many
 * deliveries. A row that needs a later attempt leaves it as a row job.
 */
export interface BatchJobData {
  ids: string[];
  origins: string[];
}

export type DeliveryJobData = RowJobData | BatchJobData;

export function isBatchJob(data: DeliveryJobData): data is BatchJobData {
  return Array.isArray((data as BatchJobData).ids);
}

export interface DispatchItem {
  id: string;
  origin: string;
  /** Unix ms; the job waits in the delayed set until then. */
  notBefore?: number;
}

export interface DeliveryQueueOptions {
  connection: ConnectionOptions;
  /** Redis key prefix; keep a hash tag (`{name}`) so Redis Cluster puts it in one slot. */
  prefix?: string;
  name?: string;
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

export class DeliveryQueue {
  readonly queue: Queue<DeliveryJobData>;
  readonly name: string;
  readonly prefix: string;

  constructor(options: DeliveryQueueOptions) {
    this.name = options.name ?? DELIVERY_QUEUE_NAME;
    this.prefix = options.prefix ?? DEFAULT_QUEUE_PREFIX;
    this.queue = new Queue<DeliveryJobData>(this.name, {
      connection: options.connection,
      prefix: this.prefix,
      defaultJobOptions: DELIVERY_JOB_OPTIONS,
    });
  }

  /** First attempts of fresh rows, grouped `batchSize` to a job. */
  async dispatchBatch(items: DispatchItem[], batchSize = 50): Promise<void> {
    if (items.length === 0) return;
    const jobs = [];
    for (let i = 0; i < items.length; i += batchSize) {
      const group = items.slice(i, i + batchSize);
      jobs.push({
        name: 'deliver-batch',
        data: { ids: group.map((g) => g.id), origins: group.map((g) => g.origin) },
        // Row ids are unique, so the first and last of a group name it uniquely.
        opts: { jobId: `obb-${group[0]!.id}-${group.at(-1)!.id}` },
      });
    }
    await this.queue.addBulk(jobs);
  }

  /** One row job per item (retries, reconciler); an existing job of the row is kept. */
  async dispatch(items: DispatchItem[]): Promise<void> {
    if (items.length === 0) return;
    const now = Date.now();
    await this.queue.addBulk(
      items.map((item) => ({
        name: 'deliver',
        data: { id: item.id, origin: item.origin },
        opts: {
          jobId: jobIdFor(item.id),
          ...(item.notBefore && item.notBefore > now ? { delay: item.notBefore - now } : {}),
        },
      })),
    );
  }

  /** Jobs waiting, delayed or running: the depth the metrics report. */
  async depth(): Promise<{ waiting: number; delayed: number; active: number }> {
    const c = await this.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return {
      waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
      delayed: c.delayed ?? 0,
      active: c.active ?? 0,
    };
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
