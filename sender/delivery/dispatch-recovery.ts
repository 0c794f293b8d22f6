/**
 * Notices that Redis lost the dispatch (flushed, or restarted without its data) and puts
 * every pending outbox row back in the queue, at once rather than after a reconciler grace.
 *
 * A marker key lives beside the queue. Every worker checks it every second (one SET NX): a
 * worker that finds it missing (Redis empty, or the very first start on this Redis) takes
 * it as a short recovery lease, re-dispatches every pending row page by page (renewing the
 * lease), then leaves the marker in place for good. One worker does each recovery; if it
 * dies midway its lease lapses and another takes over. Re-dispatching is idempotent (job
 * ids are fixed by row ids), so an overlap costs Redis calls, never a second delivery.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../shared/infra/logger.js';
import type { Outbox } from '../outbox/outbox.js';

/** The subset of ioredis the recovery uses. */
export interface MarkerRedis {
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<string | null>;
  set(key: string, value: string): Promise<string | null>;
  pexpire(key: string, ms: number): Promise<number>;
  del(key: string): Promise<number>;
}

export interface DispatchRecoveryOptions {
  redis: () => Promise<unknown> | unknown;
  /** The marker key, under the queue's hash-tagged prefix. */
  key: string;
  outbox: Outbox;
  logger: Logger;
  /** Recovery lease (default 10 s), renewed after every page. */
  leaseMs?: number;
}

export class DispatchRecovery {
  private readonly owner = randomBytes(6).toString('base64url');
  private running: Promise<void> | null = null;
  /** Recoveries this process ran (tests, logs). */
  recoveries = 0;

  constructor(private readonly options: DispatchRecoveryOptions) {}

  /** One check; runs the recovery when the marker is missing. Never two at once here. */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async checkOnce(): Promise<void> {
    const { key, outbox, logger } = this.options;
    const leaseMs = this.options.leaseMs ?? 10_000;
    const redis = (await this.options.redis()) as MarkerRedis;
    const got = await redis.set(key, `recovering:${this.owner}`, 'PX', leaseMs, 'NX');
    if (got !== 'OK') return;
    const started = Date.now();
    logger.info(
      'dispatch marker missing in Redis (first start, flush or restart): re-dispatching every pending outbox row',
    );
    try {
      const rows = await outbox.redispatchAll({
        onPage: async () => {
          await redis.pexpire(key, leaseMs);
        },
      });
      await redis.set(key, `done:${new Date().toISOString()}`);
      this.recoveries++;
      logger.info({ rows, ms: Date.now() - started }, 'pending outbox rows re-dispatched');
    } catch (err) {
      // Let the next check (here or in another worker) start over.
      await redis.del(key).catch(() => {});
      throw err;
    }
  }
}
