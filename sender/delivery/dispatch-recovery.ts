/**
 * Notices that Redis lost the dispatch of some shards (flushed, restarted without its
 * data, a Cluster master lost with no replica) and puts every pending outbox row of those
 * shards back in their queues at once, rather than after a reconciler grace (issue #19
 * item 3: recovery per shard, in parallel).
 *
 * A marker key lives in each shard's hash tag, beside its queue. Every worker checks the
 * markers of the shards it consumes every second (one small script per shard, which also
 * renews the marker's TTL): a worker that finds some missing (Redis empty, a lost master,
 * the very first start on this Redis, a new shard count) takes them as short recovery
 * leases, reads the pending rows once, page by page, and adds only the rows of those shards
 * back, as light batch jobs (ids only, `DeliveryQueue.dispatchRecovered`), every shard in
 * parallel and the next page read while this one is added; then it marks them done. A done
 * marker expires after `markerTtlMs` (24 h) unless a worker checks it, so a deployment gone
 * from this Redis leaves nothing behind for ever. One worker does each recovery; if it dies
 * midway its lease lapses and another takes over. An overlap costs Redis calls, never a
 * second delivery (the outbox claim admits one attempt at a time).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../shared/infra/logger.js';
import type { Outbox } from '../outbox/outbox.js';
import type { DeliveryQueue } from './queue.js';

/** The subset of ioredis the recovery uses. */
export interface MarkerRedis {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  set(key: string, value: string, px: 'PX', ms: number): Promise<string | null>;
  pexpire(key: string, ms: number): Promise<number>;
  del(key: string): Promise<number>;
}

/**
 * KEYS[1] the marker; ARGV: owner, lease ms, TTL ms. A done marker gets its TTL renewed
 * (0); a missing one becomes this owner's recovery lease (1); a running recovery is left
 * alone (0).
 */
const MARK = `
local v = redis.call('GET', KEYS[1])
if v then
  if string.sub(v, 1, 5) == 'done:' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return 0
end
redis.call('SET', KEYS[1], 'recovering:' .. ARGV[1], 'PX', ARGV[2])
return 1`;

export interface DispatchRecoveryOptions {
  redis: () => Promise<unknown> | unknown;
  queue: DeliveryQueue;
  /** The shards whose markers this worker watches (the ones it consumes). */
  shards: readonly number[];
  outbox: Outbox;
  logger: Logger;
  /** Recovery lease (default 10 s), renewed after every page. */
  leaseMs?: number;
  /** Lifetime of a done marker no worker checks (default 24 h). */
  markerTtlMs?: number;
  /** Pending rows read per page (default 10,000). */
  pageSize?: number;
  /** Id ranges read in parallel (default 4). */
  readers?: number;
}

/** The marker key of a shard. */
export function markerKey(queue: DeliveryQueue, shard: number): string {
  return `${queue.shardPrefix(shard)}:${queue.name}:dispatch-marker`;
}

export class DispatchRecovery {
  private readonly owner = randomBytes(6).toString('base64url');
  private running: Promise<void> | null = null;
  /** Recoveries this process ran (tests, logs). */
  recoveries = 0;
  /** Shards this process recovered, over all recoveries (tests). */
  recoveredShards = 0;

  /** Target URL to origin: a deployment has few target URLs, and parsing one costs a microsecond. */
  private readonly origins = new Map<string, string>();

  constructor(private readonly options: DispatchRecoveryOptions) {}

  private originOf(url: string): string {
    let o = this.origins.get(url);
    if (o === undefined) {
      o = new URL(url).origin;
      if (this.origins.size > 100_000) this.origins.clear();
      this.origins.set(url, o);
    }
    return o;
  }

  /** One check; runs the recovery of the shards whose marker is missing. Never two at once here. */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async checkOnce(): Promise<void> {
    const { queue, shards, logger } = this.options;
    const leaseMs = this.options.leaseMs ?? 10_000;
    const ttlMs = this.options.markerTtlMs ?? 86_400_000;
    const redis = (await this.options.redis()) as MarkerRedis;
    const got = await Promise.all(
      shards.map((s) => redis.eval(MARK, 1, markerKey(queue, s), this.owner, leaseMs, ttlMs)),
    );
    const lost = shards.filter((_, i) => Number(got[i]) === 1);
    if (lost.length === 0) return;
    const started = Date.now();
    logger.info(
      { shards: lost.length },
      'dispatch marker missing in Redis (first start, flush, lost master or new shard count): re-dispatching the pending outbox rows of those shards',
    );
    const keys = lost.map((s) => markerKey(queue, s));
    try {
      const rows = await this.redispatch(new Set(lost), async () => {
        await Promise.all(keys.map((k) => redis.pexpire(k, leaseMs)));
      });
      const done = `done:${new Date().toISOString()}`;
      await Promise.all(keys.map((k) => redis.set(k, done, 'PX', ttlMs)));
      this.recoveries++;
      this.recoveredShards += lost.length;
      logger.info(
        { rows, shards: lost.length, ms: Date.now() - started },
        'pending outbox rows re-dispatched',
      );
    } catch (err) {
      // Let the next check (here or in another worker) start over.
      await Promise.all(keys.map((k) => redis.del(k).catch(() => 0)));
      throw err;
    }
  }

  /**
   * Every pending row of `shards` back in its queue, due when the row is (a claimed row
   * when its lease ends): `readers` ranges of the id space read in parallel, each reading
   * its next page while this one is added.
   */
  private async redispatch(shards: Set<number>, onPage: () => Promise<void>): Promise<number> {
    const { outbox } = this.options;
    const bounds = await outbox.idBounds();
    if (!bounds) return 0;
    const readers = Math.max(1, this.options.readers ?? 4);
    const min = BigInt(bounds.min) - 1n;
    const span = BigInt(bounds.max) - min;
    const ranges = Array.from({ length: readers }, (_, i) => {
      const lo = min + (span * BigInt(i)) / BigInt(readers);
      const hi =
        i === readers - 1 ? BigInt(bounds.max) : min + (span * BigInt(i + 1)) / BigInt(readers);
      return [String(lo), String(hi)] as const;
    });
    let renewing: Promise<void> | null = null;
    const renew = () => (renewing ??= onPage().finally(() => (renewing = null)));
    const counts = await Promise.all(
      ranges.map(([lo, hi]) => this.redispatchRange(lo, hi, shards, renew)),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** One id range (lo, hi], page by page. */
  private async redispatchRange(
    lo: string,
    hi: string,
    shards: Set<number>,
    onPage: () => Promise<void>,
  ): Promise<number> {
    const { outbox, queue } = this.options;
    const pageSize = this.options.pageSize ?? 10_000;
    let total = 0;
    let page = await outbox.pendingPage(lo, pageSize, hi);
    for (;;) {
      const next =
        page.rows === pageSize && page.last !== null
          ? outbox.pendingPage(page.last, pageSize, hi)
          : null;
      // A failed read must not surface as an unhandled rejection while this page is added.
      next?.catch(() => {});
      total += await queue.dispatchRecovered(
        page.groups.map((g) => ({ origin: this.originOf(g.url), dueInMs: g.dueInMs, ids: g.ids })),
        shards,
      );
      if (!next) return total;
      await onPage();
      page = await next;
    }
  }
}
