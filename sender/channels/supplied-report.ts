/**
 * A delivery report handed over ready-made by an agent (`deliveryReportDue` with a
 * `report`): checked against `media-buy-delivery-webhook-result.json` before it is sent.
 * The channel owns `sequence_number` and `next_expected_at`; a webhook report never carries
 * `aggregated_totals` or `notification_id` (supplement §6.3).
 */
import { z } from 'zod';
import { DELIVERY_ROW_STATUSES } from '../../shared/envelope/delivery-report.js';
import { channelError } from './errors.js';
import type { ReportingPeriod } from './types.js';

export interface SuppliedReport {
  notificationType: 'adjusted' | 'window_update';
  period: ReportingPeriod;
  currency: string;
  rows: Record<string, unknown>[];
  /** Other members of the report (`partial_data`, `attribution_window`, `ext`...). */
  extra: Record<string, unknown>;
}

const dateTime = z.iso.datetime({ offset: true });
const metrics = z.looseObject({ spend: z.number().min(0) });

const reportSchema = z.looseObject({
  // `scheduled`, `delayed` and `final` follow the channel's own cadence, never an agent's.
  notification_type: z.enum(['adjusted', 'window_update']),
  reporting_period: z.looseObject({ start: dateTime, end: dateTime }),
  currency: z.string().regex(/^[A-Z]{3}$/),
  media_buy_deliveries: z
    .array(
      z.looseObject({
        media_buy_id: z.string().min(1),
        status: z.enum(DELIVERY_ROW_STATUSES),
        totals: metrics,
        by_package: z.array(metrics),
      }),
    )
    .min(1),
});

const CHANNEL_OWNED = ['sequence_number', 'next_expected_at'];
const FORBIDDEN = ['aggregated_totals', 'notification_id'];

export function validateSuppliedReport(input: unknown, mediaBuyId: string): SuppliedReport {
  const parsed = reportSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = ['report', ...(issue?.path ?? []).map(String)].join('.');
    throw channelError('VALIDATION_ERROR', `${path}: ${issue?.message ?? 'invalid'}`, path);
  }
  const report = parsed.data;
  for (const name of FORBIDDEN) {
    if (name in report) {
      throw channelError('VALIDATION_ERROR', `a webhook report has no ${name}`, `report.${name}`);
    }
  }
  const foreign = report.media_buy_deliveries.findIndex((r) => r.media_buy_id !== mediaBuyId);
  if (foreign >= 0) {
    throw channelError(
      'VALIDATION_ERROR',
      'a row names another media buy',
      `report.media_buy_deliveries.${foreign}.media_buy_id`,
    );
  }
  const period = report.reporting_period;
  if (Date.parse(period.end) < Date.parse(period.start)) {
    throw channelError(
      'VALIDATION_ERROR',
      'period ends before it starts',
      'report.reporting_period',
    );
  }
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(report)) {
    if (
      ![
        'notification_type',
        'reporting_period',
        'currency',
        'media_buy_deliveries',
        ...CHANNEL_OWNED,
      ].includes(k)
    ) {
      extra[k] = v;
    }
  }
  return {
    notificationType: report.notification_type,
    period: { start: period.start, end: period.end },
    currency: report.currency,
    rows: report.media_buy_deliveries,
    extra,
  };
}
