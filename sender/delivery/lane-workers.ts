/**
 * The BullMQ consumers of one lane (queue.ts: `live` or `recovery`), one per consumed
 * shard, as the delivery worker (worker.ts) runs them: its lock and stall settings, and
 * no job taken before its `start()` has warmed the connections up.
 */
import { Worker, type Job } from 'bullmq';
import type { DeliveryJobData, DeliveryQueue, Lane } from './queue.js';
import type { DeliveryWorkerOptions } from './worker-options.js';

export function laneWorkers(
  queue: DeliveryQueue,
  lane: Lane,
  shards: readonly number[],
  o: Pick<DeliveryWorkerOptions, 'connection' | 'lockDurationMs' | 'stalledIntervalMs'> & {
    concurrency: number;
    process: (job: Job<DeliveryJobData>, token?: string) => Promise<void>;
    onError: (err: Error, shard: number) => void;
  },
): Array<Worker<DeliveryJobData>> {
  return shards.map((shard) => {
    const w = new Worker<DeliveryJobData>(
      lane === 'live' ? queue.name : queue.recoveryName,
      (job, token) => o.process(job, token),
      {
        connection: o.connection,
        prefix: queue.shardPrefix(shard),
        concurrency: o.concurrency,
        lockDuration: o.lockDurationMs ?? 4000,
        stalledInterval: o.stalledIntervalMs ?? 2000,
        // Running a stalled job again is safe (same row, same key, same bytes).
        maxStalledCount: 1000,
        // Jobs are taken only once `start()` has warmed the connections up.
        autorun: false,
      },
    );
    w.on('error', (err) => o.onError(err, shard));
    return w;
  });
}
