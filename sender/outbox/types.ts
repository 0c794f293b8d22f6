/**
 * The outbox seam: what a channel (task, reporting, impairment...) hands over to be
 * delivered. The payload is serialised once at enqueue and frozen with its key and
 * timestamp, so every retry sends the same bytes.
 */
import type { PoolClient } from '../../shared/infra/pg.js';
import type { TraceCarrier } from '../../shared/telemetry/trace-context.js';

/** How a delivery authenticates: RFC 9421 by default, legacy only where the buyer opted in. */
export type DeliveryAuth =
  { mode: 'rfc9421' } | { mode: 'hmac'; secret: string } | { mode: 'bearer'; token: string };

export type WebhookChannel = 'task' | 'push' | 'reporting' | 'account' | 'agent';

export interface WebhookTarget {
  url: string;
  auth: DeliveryAuth;
  channel: WebhookChannel;
}

export interface OutboundEvent {
  target: WebhookTarget;
  /** The complete envelope, including idempotency_key and timestamp. */
  payload: Record<string, unknown>;
  idempotencyKey: string;
  /** e.g. a task status, 'scheduled', 'final', 'impairment'. */
  notificationType: string;
  notificationId?: string;
  mediaBuyId?: string;
  /**
   * Every buy the payload covers, when it covers several (an aggregated report, which has
   * no `mediaBuyId`): its attempts are then listed under each. Bookkeeping only, never sent.
   */
  mediaBuyIds?: string[];
  principalId?: string;
  taskId?: string;
  /** A task event's task type (`create_media_buy`); its notificationType is the status. */
  taskType?: string;
  sequenceNumber?: number;
  subscriberId?: string;
  /**
   * The trace context of the enqueue (set by the outbox when tracing is on): carried in the
   * dispatch job so the worker's spans join the emit's trace. Never stored in the outbox.
   */
  trace?: TraceCarrier;
}

export interface EventSink {
  /**
   * Freezes each event in the outbox (inside the caller's transaction when `client` is
   * given) and dispatches it after commit. Resolves to the outbox ids, in input order.
   */
  enqueue(events: OutboundEvent[], client?: PoolClient): Promise<string[]>;
}
