/**
 * One `webhook_activity[]` record (`core/webhook-activity-record.json`, supplement §4.4):
 * the seller's debug log, one record per HTTP attempt. Closed schema.
 */
import { z } from 'zod';

export const ACTIVITY_STATUSES = [
  'success',
  'failed',
  'timeout',
  'connection_error',
  'pending',
] as const;
export type ActivityStatus = (typeof ACTIVITY_STATUSES)[number];

const dateTime = z.iso.datetime({ offset: true });

export const WebhookActivityRecordSchema = z
  .strictObject({
    idempotency_key: z.string().min(1),
    fired_at: dateTime,
    notification_type: z.string().min(1),
    attempt: z.int().min(1),
    status: z.enum(ACTIVITY_STATUSES),
    /** Query and fragment stripped, token-like path segments redacted. */
    url: z.string().min(1),
    notification_id: z.string().min(1).optional(),
    subscriber_id: z.string().min(1).optional(),
    sequence_number: z.int().min(0).optional(),
    payload_size_bytes: z.int().min(0).optional(),
    ext: z.record(z.string(), z.unknown()).optional(),
    // Optional in the JSON schema, but "sent as explicit null, never omitted": our records
    // always carry these four, so the schema requires them.
    completed_at: dateTime.nullable(),
    http_status_code: z.int().min(100).max(599).nullable(),
    response_time_ms: z.number().min(0).nullable(),
    error_message: z.string().max(500).nullable(),
  })
  .superRefine((r, ctx) => {
    if (r.url.includes('?') || r.url.includes('#')) {
      ctx.addIssue({
        code: 'custom',
        path: ['url'],
        message: 'query and fragment must be stripped',
      });
    }
    if (
      (r.status === 'timeout' || r.status === 'connection_error') &&
      r.http_status_code !== null
    ) {
      ctx.addIssue({ code: 'custom', path: ['http_status_code'], message: `null for ${r.status}` });
    }
    if (r.status === 'pending' && r.completed_at !== null) {
      ctx.addIssue({ code: 'custom', path: ['completed_at'], message: 'null while pending' });
    }
    if (
      r.status === 'success' &&
      (r.http_status_code === null || r.http_status_code >= 300 || r.http_status_code < 200)
    ) {
      ctx.addIssue({ code: 'custom', path: ['http_status_code'], message: 'success means 2xx' });
    }
    if (
      r.status === 'failed' &&
      r.http_status_code !== null &&
      r.http_status_code >= 200 &&
      r.http_status_code < 300
    ) {
      ctx.addIssue({ code: 'custom', path: ['http_status_code'], message: 'failed means non-2xx' });
    }
  });
export type WebhookActivityRecord = z.infer<typeof WebhookActivityRecordSchema>;
