/**
 * Account- and agent-level webhook payloads (supplement §6.7): event-specific closed
 * shapes, not MCP envelopes. Only the members the supplement names are modelled; which
 * members beyond the named ones are optional is marked there with `?`. Which types exist
 * on which surface: notification-types.ts.
 */
import { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN, NOTIFICATION_ID_PATTERN } from './mcp.js';

const dateTime = z.iso.datetime({ offset: true });

const common = {
  idempotency_key: z.string().regex(IDEMPOTENCY_KEY_PATTERN),
  notification_id: z.string().regex(NOTIFICATION_ID_PATTERN),
  fired_at: dateTime,
  subscriber_id: z.string().min(1).optional(),
  ext: z.record(z.string(), z.unknown()).optional(),
};

/** Invalidates cached capability documents; carries the version, not the document. */
export const CapabilitiesChangedSchema = z.strictObject({
  ...common,
  notification_type: z.literal('capabilities.changed'),
  agent_url: z.url(),
  changed_at: dateTime,
  reason: z.string().min(1),
  capabilities_version: z.union([z.string().min(1), z.int().nonnegative()]),
  changed_paths: z.array(z.string()).optional(),
});
export type CapabilitiesChanged = z.infer<typeof CapabilitiesChangedSchema>;

export const AccountStatusChangedSchema = z.strictObject({
  ...common,
  notification_type: z.literal('account.status_changed'),
  account_id: z.string().min(1),
  previous_status: z.string().min(1),
  status: z.string().min(1),
  observed_at: dateTime,
  reason_code: z.string().min(1),
  reason_detail: z.string().optional(),
  /** Setup guidance; never a `url` (§6.7). */
  setup: z
    .record(z.string(), z.unknown())
    .refine((s) => !('url' in s), {
      message: 'setup carries no url',
    })
    .optional(),
});
export type AccountStatusChanged = z.infer<typeof AccountStatusChangedSchema>;

export const CreativeStatusChangedSchema = z.strictObject({
  ...common,
  notification_type: z.literal('creative.status_changed'),
  account_id: z.string().min(1),
  creative_id: z.string().min(1),
  transition: z.record(z.string(), z.unknown()),
  reason_code: z.string().min(1),
  reason_detail: z.string().optional(),
  initiator: z.unknown(),
});
