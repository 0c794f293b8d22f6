/**
 * Prometheus metrics of one receiver instance, on a registry of its own so several
 * receivers (tests, one process hosting two) never collide.
 */
import { Counter, Histogram, Registry } from 'prom-client';

export class ReceiverMetrics {
  readonly registry: Registry;
  readonly verified: Counter;
  readonly rejected: Counter<'code'>;
  readonly duplicates: Counter;
  readonly responses: Counter<'status'>;
  readonly published: Counter<'kind'>;
  readonly publication: Histogram;

  constructor(registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.verified = new Counter({
      name: 'receiver_webhooks_verified_total',
      help: 'Deliveries whose signature (or legacy credential) verified',
      registers,
    });
    this.rejected = new Counter({
      name: 'receiver_webhooks_rejected_total',
      help: 'Deliveries refused, by error code',
      labelNames: ['code'],
      registers,
    });
    this.duplicates = new Counter({
      name: 'receiver_webhooks_duplicates_total',
      help: 'Deliveries of an already acknowledged idempotency key (not republished)',
      registers,
    });
    this.responses = new Counter({
      name: 'receiver_webhooks_responses_total',
      help: 'Responses by HTTP status (409 conflicts, 503 in flight, 429 at the bound...)',
      labelNames: ['status'],
      registers,
    });
    this.published = new Counter({
      name: 'receiver_webhooks_published_total',
      help: 'Events handed to the publisher, by kind (current, stale)',
      labelNames: ['kind'],
      registers,
    });
    this.publication = new Histogram({
      name: 'receiver_publication_seconds',
      help: 'Time to publish one event (handler, forward or enqueue)',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
  }
}
