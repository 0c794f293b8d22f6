/**
 * The two kinds of fire on a media buy's persistent channels, as outbound events:
 * delivery reports (supplement §6.3) on `reporting_webhook`, impairments (§6.4) on
 * `push_notification_config`. Each gets a fresh idempotency key; the body is complete here
 * and frozen by the outbox.
 */
import type { WebhookTaskType } from '../../shared/envelope/index.js';
import type { OutboundEvent } from '../outbox/types.js';
import { newIdempotencyKey } from '../outbox/keys.js';
import { deliveryAuthFor } from './config-validation.js';
import { channelEnvelope } from './envelope.js';
import type {
  DeliveryData,
  Impairment,
  LateDelivery,
  PushNotificationConfig,
  ReportingPeriod,
  ReportingWebhook,
  TerminalBuyStatus,
} from './types.js';
import { isLate } from './types.js';
import type { SuppliedReport } from './supplied-report.js';
import type { DeliveryNotificationType } from '../../shared/envelope/notification-types.js';

export type ReportNotificationType = DeliveryNotificationType;

/** What a fire needs to know about the buy (a row of `channel_media_buys`). */
export interface BuyChannels {
  media_buy_id: string;
  principal_id: string | null;
  task_id: string;
  task_type: WebhookTaskType;
  context: Record<string, unknown> | null;
  push_config: PushNotificationConfig | null;
  reporting_config: ReportingWebhook | null;
  currency: string | null;
}

const OPERATION_ID = /^[A-Za-z0-9_.:-]{1,255}$/;

/** Always reported, whatever `requested_metrics` says (supplement §6.5). */
const ALWAYS_REPORTED = ['impressions', 'spend'];
/** Numeric members of a row or package that describe it rather than measure it. */
const NOT_METRICS = ['pacing_index', 'rate', 'effective_rate'];

/**
 * Drops numeric metrics the buyer did not ask for (`requested_metrics`; omitted = all).
 * Non-numeric members (ids, states, windows) and the always-reported ones stay.
 */
function onlyRequested<T extends Record<string, unknown>>(
  metrics: T,
  requested: string[] | undefined,
): T {
  if (!requested) return metrics;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(metrics)) {
    const keep =
      typeof value !== 'number' ||
      ALWAYS_REPORTED.includes(name) ||
      NOT_METRICS.includes(name) ||
      requested.includes(name);
    if (keep) out[name] = value;
  }
  return out as T;
}

/**
 * `reporting_webhook` carries no `operation_id`, yet the envelope requires one: an explicit
 * `operation_id` member on the reporting config wins, then the buy's push config's, then a
 * stable id derived from the buy.
 */
export function reportingOperationId(buy: BuyChannels): string {
  const own = buy.reporting_config?.operation_id;
  if (typeof own === 'string' && OPERATION_ID.test(own)) return own;
  if (buy.push_config) return buy.push_config.operation_id;
  return `reporting.${buy.media_buy_id.replace(/[^A-Za-z0-9_.:-]/g, '_')}`.slice(0, 255);
}

export interface ReportFire {
  type: ReportNotificationType;
  period: ReportingPeriod;
  /** From the data source, or a ready report supplied by the agent. */
  data: DeliveryData | LateDelivery | SuppliedReport;
  sequenceNumber: number;
  /** Fire time (ms). */
  now: number;
  /** Omitted on `final`. */
  nextExpectedAt?: string;
  /** For `final`: the buy's terminal state, carried in the row. */
  terminalStatus?: TerminalBuyStatus;
}

export function reportEvent(buy: BuyChannels, fire: ReportFire): OutboundEvent {
  const config = buy.reporting_config;
  if (!config) throw new Error(`media buy ${buy.media_buy_id} has no reporting_webhook`);
  const fireTime = new Date(fire.now).toISOString();
  if ('rows' in fire.data) return suppliedReportEvent(buy, config, fire, fire.data, fireTime);
  const late = isLate(fire.data);
  const result: Record<string, unknown> = {
    notification_type: fire.type,
    sequence_number: fire.sequenceNumber,
    reporting_period: fire.period,
    currency: reportCurrency(buy, fire),
    media_buy_deliveries: [deliveryRow(buy, fire)],
  };
  if (late) {
    result.partial_data = true;
    result.unavailable_count = 1;
  }
  if (fire.type !== 'final' && fire.nextExpectedAt) result.next_expected_at = fire.nextExpectedAt;
  return reportEnvelopeEvent(buy, config, fire, result, fireTime);
}

/** The report's `currency`: the data's, else the buy's last known one. */
export function reportCurrency(buy: BuyChannels, fire: Pick<ReportFire, 'data'>): string {
  return fire.data.currency ?? buy.currency ?? 'USD';
}

/** The buy's row of `media_buy_deliveries` for a fire from the data source. */
export function deliveryRow(
  buy: BuyChannels,
  fire: Pick<ReportFire, 'type' | 'data' | 'now' | 'terminalStatus'>,
): Record<string, unknown> {
  const data = fire.data;
  if ('rows' in data) throw new Error('a supplied report carries its own rows');
  const late = isLate(data);
  const row: Record<string, unknown> = { media_buy_id: buy.media_buy_id };
  if (isLate(data)) {
    row.status = 'reporting_delayed';
    if (data.expectedAvailability) row.expected_availability = data.expectedAvailability;
    row.totals = { spend: 0 };
    row.by_package = [];
  } else {
    row.status = data.status;
    if (data.pricing_model !== undefined) row.pricing_model = data.pricing_model;
    if (data.pacing_index !== undefined) row.pacing_index = data.pacing_index;
    const requested = buy.reporting_config?.requested_metrics;
    row.totals = onlyRequested(data.totals, requested);
    row.by_package = data.by_package.map((p) => onlyRequested(p, requested));
  }
  if (fire.type === 'adjusted' || fire.type === 'window_update') row.is_adjusted = true;
  if (fire.type === 'final') {
    if (fire.terminalStatus && !late) row.status = fire.terminalStatus;
    row.is_final = !late;
    if (!late) row.finalized_at = new Date(fire.now).toISOString();
  }
  return row;
}

function suppliedReportEvent(
  buy: BuyChannels,
  config: ReportingWebhook,
  fire: ReportFire,
  report: SuppliedReport,
  fireTime: string,
): OutboundEvent {
  const result: Record<string, unknown> = {
    ...report.extra,
    notification_type: report.notificationType,
    sequence_number: fire.sequenceNumber,
    reporting_period: report.period,
    currency: report.currency,
    media_buy_deliveries: report.rows,
  };
  if (fire.nextExpectedAt) result.next_expected_at = fire.nextExpectedAt;
  return reportEnvelopeEvent(buy, config, fire, result, fireTime);
}

/**
 * The outbound event of a delivery report: the envelope under the reporting registration.
 * `taskId` and `mediaBuyId` are the buy's own, or (aggregated reports) the stream's handle
 * and none.
 */
export function reportEnvelopeEvent(
  buy: BuyChannels,
  config: ReportingWebhook,
  fire: { type: ReportNotificationType; sequenceNumber: number },
  result: Record<string, unknown>,
  fireTime: string,
  ids: { taskId: string; mediaBuyId?: string } = {
    taskId: buy.task_id,
    mediaBuyId: buy.media_buy_id,
  },
): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  const payload = channelEnvelope({
    idempotencyKey,
    operationId: reportingOperationId(buy),
    taskId: ids.taskId,
    taskType: 'media_buy_delivery',
    status: 'completed',
    timestamp: fireTime,
    ...(config.token !== undefined && { token: config.token }),
    ...(buy.context && { context: buy.context }),
    result,
  });
  return {
    target: { url: config.url, auth: deliveryAuthFor(config), channel: 'reporting' },
    payload,
    idempotencyKey,
    notificationType: fire.type,
    ...(ids.mediaBuyId !== undefined && { mediaBuyId: ids.mediaBuyId }),
    ...(buy.principal_id && { principalId: buy.principal_id }),
    taskId: ids.taskId,
    sequenceNumber: fire.sequenceNumber,
  };
}

/**
 * An impairment fire. The spec has no dedicated schema (gap): the result is the
 * impairment object plus the buy's updated `health` and its id, inside the MCP envelope
 * the push config's channel yields; `notification_id` is the `impairment_id`, stable
 * across re-emissions while every fire gets a fresh key.
 */
export function impairmentEvent(
  buy: BuyChannels,
  impairment: Impairment,
  health: 'ok' | 'impaired',
  now: number,
): OutboundEvent {
  const config = buy.push_config;
  if (!config) throw new Error(`media buy ${buy.media_buy_id} has no push_notification_config`);
  const idempotencyKey = newIdempotencyKey();
  const payload = channelEnvelope({
    idempotencyKey,
    operationId: config.operation_id,
    taskId: buy.task_id,
    taskType: buy.task_type,
    status: 'completed',
    timestamp: new Date(now).toISOString(),
    notificationId: impairment.impairment_id,
    ...(config.token !== undefined && { token: config.token }),
    ...(buy.context && { context: buy.context }),
    result: {
      notification_type: 'impairment',
      ...impairment,
      media_buy_id: buy.media_buy_id,
      health,
    },
  });
  return {
    target: { url: config.url, auth: deliveryAuthFor(config), channel: 'push' },
    payload,
    idempotencyKey,
    notificationType: 'impairment',
    notificationId: impairment.impairment_id,
    mediaBuyId: buy.media_buy_id,
    ...(buy.principal_id && { principalId: buy.principal_id }),
    taskId: buy.task_id,
  };
}
