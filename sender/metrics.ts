/**
 * Prometheus metrics of the sender: deliveries by outcome, attempts by result, attempt
 * latency, retries, queue depth. Names carry no brand word.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeliveryQueue } from './delivery/queue.js';

export class SenderMetrics {
  readonly registry: Registry;
  readonly deliveries: Counter<'outcome'>;
  readonly attempts: Counter<'result'>;
  readonly retries: Counter;
  readonly attemptSeconds: Histogram;
  private queue: DeliveryQueue | null = null;

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
      help: 'Delivery jobs in the queue, by state',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const queue = watched();
        if (!queue) return;
        const d = await queue.depth();
        this.set({ state: 'waiting' }, d.waiting);
        this.set({ state: 'delayed' }, d.delayed);
        this.set({ state: 'active' }, d.active);
      },
    });
  }

  watchQueue(queue: DeliveryQueue): void {
    this.queue = queue;
  }
}
