/**
 * The media-buy channels (reporting schedule, impairment coalescence, termination,
 * rotation) as NotificationCore sees them. They are built in `sender/channels/` on top of
 * the outbox seam (`EventSink`) and injected into NotificationCore, which forwards its
 * media-buy methods here unchanged.
 */
import type { PoolClient } from '../../shared/infra/pg.js';

/** The buyer's registration objects as they arrived in the request (wire shape). */
export interface MediaBuyChannelsConfig {
  mediaBuyId: string;
  principalId: string;
  /** `push_notification_config` of the buy (impairments and other state events). */
  pushNotificationConfig?: Record<string, unknown> | null;
  /** `reporting_webhook` of the buy (delivery reports). */
  reportingWebhook?: Record<string, unknown> | null;
  /** The buy's `start_time` / `end_time` (ISO 8601): the flight end ends the schedule. */
  flightStart?: string | null;
  flightEnd?: string | null;
  /** Join the agent's transaction (create/update of the buy). */
  client?: PoolClient;
}

export interface DeliveryReportDue {
  mediaBuyId: string;
  principalId: string;
  /** The delivery report (`result` of the envelope), without envelope members. */
  report: Record<string, unknown>;
  client?: PoolClient;
}

export interface ImpairmentObserved {
  mediaBuyId: string;
  principalId: string;
  /** The impairment object (supplement §6.4). */
  impairment: Record<string, unknown>;
  client?: PoolClient;
}

export interface MediaBuyTerminal {
  mediaBuyId: string;
  principalId: string;
  status: 'completed' | 'canceled' | 'rejected';
  client?: PoolClient;
}

export interface MediaBuyChannelsApi {
  /** Created or replaced configs; honoured from the next fire after this call. */
  mediaBuyChannelsConfigured(input: MediaBuyChannelsConfig): Promise<void>;
  /** Resolves to the outbox ids enqueued. */
  deliveryReportDue(input: DeliveryReportDue): Promise<string[]>;
  /** Resolves to the outbox ids enqueued (none while coalescing). */
  impairmentObserved(input: ImpairmentObserved): Promise<string[]>;
  /** Flushes queued impairments, sends the final report, then closes the channels. */
  mediaBuyTerminal(input: MediaBuyTerminal): Promise<string[]>;
}
