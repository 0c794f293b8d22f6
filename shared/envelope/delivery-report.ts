/**
 * The delivery report (`media-buy-delivery-webhook-result.json`, supplement §6.3): the
 * `result` of an MCP envelope with `task_type: media_buy_delivery`. A bare report as the
 * whole POST body is invalid (the envelope parser names the missing members).
 */
import { z } from 'zod';
import { DELIVERY_NOTIFICATION_TYPES } from './notification-types.js';

/** The buy's lifecycle/reporting state in a row; never the envelope's task status. */
export const DELIVERY_ROW_STATUSES = [
  'pending_creatives',
  'pending_start',
  'pending',
  'active',
  'paused',
  'completed',
  'rejected',
  'canceled',
  'failed',
  'reporting_delayed',
] as const;

const dateTime = z.iso.datetime({ offset: true });

export const DeliveryTotalsSchema = z.looseObject({
  impressions: z.number().nonnegative().optional(),
  spend: z.number().nonnegative().optional(),
  clicks: z.number().nonnegative().optional(),
});

export const MediaBuyDeliveryRowSchema = z.looseObject({
  media_buy_id: z.string().min(1),
  status: z.enum(DELIVERY_ROW_STATUSES),
  expected_availability: dateTime.optional(),
  is_adjusted: z.boolean().optional(),
  is_final: z.boolean().optional(),
  finalized_at: dateTime.optional(),
  pricing_model: z.string().optional(),
  pacing_index: z.number().nonnegative().optional(),
  totals: DeliveryTotalsSchema.optional(),
  by_package: z.array(z.looseObject({})).optional(),
});

export const DeliveryReportSchema = z
  .looseObject({
    notification_type: z.enum(DELIVERY_NOTIFICATION_TYPES),
    reporting_period: z.looseObject({ start: dateTime, end: dateTime }),
    currency: z.string().regex(/^[A-Z]{3}$/),
    media_buy_deliveries: z.array(MediaBuyDeliveryRowSchema).min(1),
    partial_data: z.boolean().optional(),
    unavailable_count: z.int().nonnegative().optional(),
    sequence_number: z.int().min(1).optional(),
    next_expected_at: dateTime.optional(),
    attribution_window: z.unknown().optional(),
    errors: z.array(z.unknown()).optional(),
    sandbox: z.boolean().optional(),
    context: z.record(z.string(), z.unknown()).optional(),
    ext: z.record(z.string(), z.unknown()).optional(),
    // Point-in-time reports carry no notification_id; aggregated_totals belongs to
    // get_media_buy_delivery responses only.
    notification_id: z.never().optional(),
    aggregated_totals: z.never().optional(),
  })
  .refine((r) => r.notification_type !== 'final' || r.next_expected_at === undefined, {
    message: 'a final report has no next_expected_at',
    path: ['next_expected_at'],
  });
export type DeliveryReport = z.infer<typeof DeliveryReportSchema>;
