/**
 * Prometheus metrics of the sender: deliveries by outcome, attempts by result, attempt
 * latency, retries, queue depth per dispatch shard, age of the oldest pending delivery.
 * Names carry no brand word; every name is listed in sender/README.md (Metrics).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeliveryQueue } from './delivery/queue.js';
import type { Outbox } from './outbox/outbox.js';

export class SenderMetrics {
  readonly registry: Registry;
  readonly deliveries: Counter<'outcome'>;
  readonly attempts: Counter<'result'>;
  readonly retries: Counter;
  readonly attemptSeconds: Histogram;
  private queue: DeliveryQueue | null = null;
  private outbox: Pick<Outbox, 'oldestPendingSeconds'> | null = null;

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    this.deliveries = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Deliveries finished, by outcome (delivered, stopped, expired)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.attempts = new Counter({
      name: 'webhook_attempts_total',
      help: 'HTTP attempts, by result (success, failed, timeout, connection_error)',
      labelNames: ['result'],
      registers: [registry],
    });
    this.retries = new Counter({
      name: 'webhook_retries_total',
      help: 'Attempts rescheduled after a retryable failure',
      registers: [registry],
    });
    this.attemptSeconds = new Histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Time from sending an attempt to its response or failure',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    const watched = (): DeliveryQueue | null => this.queue;
    new Gauge({
      name: 'webhook_queue_depth',
      help: 'Delivery jobs in the queue, by dispatch shard and state (waiting, delayed, active)',
      labelNames: ['shard', 'state'],
      registers: [registry],
      async collect() {
        const queue = watched();
        if (!queue) return;
        const shards = await queue.depthByShard();
        for (const [i, d] of shards.entries()) {
          const shard = String(i);
          this.set({ shard, state: 'waiting' }, d.waiting);
          this.set({ shard, state: 'delayed' }, d.delayed);
          this.set({ shard, state: 'active' }, d.active);
        }
      },
    });
    const outbox = (): Pick<Outbox, 'oldestPendingSeconds'> | null => this.outbox;
    new Gauge({
      name: 'webhook_oldest_pending_seconds',
      help: 'Age of the oldest delivery not yet finished (0 when none is pending)',
      registers: [registry],
      async collect() {
        const o = outbox();
        if (o) this.set(await o.oldestPendingSeconds());
      },
    });
  }

  /** Reports this queue's depth per shard at each scrape. */
  watchQueue(queue: DeliveryQueue): void {
    this.queue = queue;
  }

  /** Reports the age of this outbox's oldest pending delivery at each scrape (one query). */
  watchOutbox(outbox: Pick<Outbox, 'oldestPendingSeconds'>): void {
    this.outbox = outbox;
  }
}
