/**
 * What agents hand the channels: the input of each call, and the checks that refuse a
 * malformed one with the task error the spec names (VALIDATION_ERROR and its field).
 */
import type { PoolClient } from '../../shared/infra/pg.js';
import { channelError } from './errors.js';
import type { ReportingPeriod, TerminalBuyStatus } from './types.js';

/** `mediaBuyChannelsConfigured`: `undefined` leaves a config as is, `null` removes it. */
export interface ChannelsConfiguredInput extends CallOptions {
  mediaBuyId: string;
  principalId?: string;
  pushNotificationConfig?: unknown;
  reportingWebhook?: unknown;
  /** The seller's handle carried as `task_id` (default: the media buy id). */
  taskId?: string;
  /** `task_type` of impairment envelopes (default `create_media_buy`). */
  taskType?: string;
  /** The request's top-level `context`, echoed verbatim. */
  context?: Record<string, unknown>;
  /** ISO 4217 currency used when a report has no data yet (e.g. `delayed`). */
  currency?: string;
  /** The product's `expected_delay_minutes`: each period fires this long after it ends. */
  expectedDelayMinutes?: number;
  /**
   * The buy's flight (`start_time` / `end_time`, ISO 8601 date-times; `null` clears). No
   * period is reported before the start; the end ends the schedule: its last period is
   * cut at the end, then the `final` report, and the channels close (§4.7).
   */
  flightStart?: string | null;
  flightEnd?: string | null;
}

export interface CallOptions {
  /** Run inside the caller's transaction (the agent's state change). */
  client?: PoolClient;
}

export interface DeliveryReportDueInput extends CallOptions {
  mediaBuyId: string;
  principalId?: string;
  /**
   * `scheduled` (default): fire what the schedule has due now, e.g. when late data arrived.
   * `adjusted`: corrected data for `period`. `window_update` (3.2 only): a wider window.
   * Taken from `report.notification_type` when a report is given.
   */
  notificationType?: 'scheduled' | 'adjusted' | 'window_update';
  /** For `adjusted` / `window_update` without `report`: the data source is asked for it. */
  period?: ReportingPeriod;
  /**
   * A ready report (the envelope's `result` without `sequence_number`/`next_expected_at`,
   * which the channel assigns) for `adjusted` / `window_update`.
   */
  report?: Record<string, unknown>;
}

export interface ImpairmentObservedInput extends CallOptions {
  mediaBuyId: string;
  principalId?: string;
  /** `core/impairment.json`; the extra member `resolved_at` closes it. */
  impairment: unknown;
}

export interface MediaBuyTerminalInput extends CallOptions {
  mediaBuyId: string;
  principalId?: string;
  status: TerminalBuyStatus;
}

export const CURRENCY = /^[A-Z]{3}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export function checkMediaBuyId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > 255) {
    throw channelError(
      'VALIDATION_ERROR',
      'media_buy_id must be a non-empty string',
      'media_buy_id',
    );
  }
  return id;
}

/** An optional ISO 8601 date-time input (`null` clears it) as Unix ms. */
export function checkInstant(value: unknown, field: string): number | null | undefined {
  if (value === undefined || value === null) return value;
  const ms = typeof value === 'string' && DATE_TIME.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) {
    throw channelError('VALIDATION_ERROR', `${field} must be an ISO 8601 date-time`, field);
  }
  return ms;
}

export function checkPeriod(period: ReportingPeriod | undefined): ReportingPeriod {
  const start = Date.parse(period?.start ?? '');
  const end = Date.parse(period?.end ?? '');
  if (!period || Number.isNaN(start) || Number.isNaN(end) || end < start) {
    throw channelError(
      'VALIDATION_ERROR',
      'period must have ISO 8601 start <= end',
      'reporting_period',
    );
  }
  return { start: period.start, end: period.end };
}
